package emulate

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/samtemplate"
)

// TestEventShape: the front door's event is what API Gateway sends with
// payload 2.0.
func TestEventShape(t *testing.T) {
	fd := &frontDoor{apiID: "emulated"}
	route := &samtemplate.Route{Method: "ANY", Path: "/{proxy+}", Authorized: true}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:3000/api/containers?a=1&a=2&b=x", strings.NewReader("\x00\x01"))
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Add("X-Multi", "1")
	r.Header.Add("X-Multi", "2")
	r.Header.Set("Cookie", "c1=v1; c2=v2")
	ev := fd.event(r, route, map[string]string{"proxy": "api/containers"}, map[string]string{"sub": "alice"}, []byte("\x00\x01"))
	if ev.Version != "2.0" || ev.RouteKey != "ANY /{proxy+}" || ev.RequestContext.RouteKey != ev.RouteKey || ev.RequestContext.Stage != "$default" {
		t.Errorf("version/route/stage: %q %q %q", ev.Version, ev.RouteKey, ev.RequestContext.Stage)
	}
	if ev.RawPath != "/api/containers" || ev.RawPath != ev.RequestContext.HTTP.Path || ev.PathParameters["proxy"] != "api/containers" {
		t.Errorf("paths: %q %q %v", ev.RawPath, ev.RequestContext.HTTP.Path, ev.PathParameters)
	}
	if ev.RawQueryString != "a=1&a=2&b=x" || ev.QueryStringParameters["a"] != "1,2" {
		t.Errorf("query: %q %v", ev.RawQueryString, ev.QueryStringParameters)
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("header %q is not lowercase", k)
		}
	}
	if ev.Headers["x-multi"] != "1,2" || ev.Headers["host"] != ev.RequestContext.DomainName || ev.Headers["cookie"] != "" ||
		len(ev.Cookies) != 2 || ev.Headers["x-amzn-trace-id"] == "" {
		t.Errorf("headers %v cookies %v", ev.Headers, ev.Cookies)
	}
	if !ev.IsBase64Encoded || ev.Body != base64.StdEncoding.EncodeToString([]byte("\x00\x01")) {
		t.Errorf("binary body: %v %q", ev.IsBase64Encoded, ev.Body)
	}
	if ev.RequestContext.Authorizer.JWT.Claims["sub"] != "alice" || ev.RequestContext.RequestID == "" {
		t.Errorf("context %+v", ev.RequestContext)
	}
}

// TestGatewayAnswers: what API Gateway answers before any function runs.
func TestGatewayAnswers(t *testing.T) {
	tokens := config.Tokens{{Token: "good-token", User: "alice"}}
	fd := &frontDoor{routes: []*samtemplate.Route{{Method: "GET", Path: "/api/x", Authorized: true}}, auth: config.Auth{Tokens: tokens}}
	for _, tc := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "/api/x", "", http.StatusUnauthorized},
		{"GET", "/api/x", "Bearer wrong", http.StatusUnauthorized},
		{"GET", "/api/x", "Basic good-token", http.StatusUnauthorized},
		{"POST", "/api/x", "Bearer good-token", http.StatusNotFound},
		{"GET", "/other", "Bearer good-token", http.StatusNotFound},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		fd.ServeHTTP(w, r)
		if w.Code != tc.want || !strings.HasPrefix(w.Body.String(), `{"message":`) {
			t.Errorf("%s %s (%q): %d %s, want %d", tc.method, tc.path, tc.auth, w.Code, w.Body, tc.want)
		}
	}
	if c, ok := fd.claims(httptest.NewRequest(http.MethodGet, "/", nil)); ok || c != nil {
		t.Error("claims without a token")
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer good-token")
	if c, ok := fd.claims(r); !ok || c["sub"] != "alice" || c["cognito:groups"] != "" {
		t.Errorf("claims %v %v", c, ok)
	}
}
