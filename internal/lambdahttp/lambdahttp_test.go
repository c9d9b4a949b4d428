package lambdahttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/lambdahttp"
)

// seen is what a handler saw of one request.
type seen struct {
	method, path, rawPath, query, requestURI, host, remote, proto string
	header                                                        http.Header
	body                                                          string
	contentLength                                                 int64
	caller                                                        identity.Caller
	hasCaller                                                     bool
}

func capture(into *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c, ok := identity.From(r.Context())
		*into = seen{method: r.Method, path: r.URL.Path, rawPath: r.URL.EscapedPath(), query: r.URL.RawQuery,
			requestURI: r.RequestURI, host: r.Host, remote: r.RemoteAddr, proto: r.Proto, header: r.Header.Clone(),
			body: string(b), contentLength: r.ContentLength, caller: c, hasCaller: ok}
		w.WriteHeader(http.StatusNoContent)
	})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// event is a minimal payload 2.0 event for method and rawPath.
func event(method, rawPath string, mod func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: rawPath,
		Headers: map[string]string{"host": "abc123.execute-api.eu-west-1.amazonaws.com"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", RequestID: "Qx1yZg-ZFiAEMfQ=", APIID: "abc123",
			DomainName: "abc123.execute-api.eu-west-1.amazonaws.com",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7"},
		},
	}
	if mod != nil {
		mod(&ev)
	}
	return ev
}

func withClaims(claims map[string]string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims}}
	}
}

func TestRequest(t *testing.T) {
	cases := []struct {
		name  string
		ev    events.APIGatewayV2HTTPRequest
		opts  lambdahttp.Options
		check func(t *testing.T, s seen)
	}{
		{"method path query", event("GET", "/api/containers", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawQueryString = "status=running&status=stopped&label=tier%3Dweb"
		}), lambdahttp.Options{}, func(t *testing.T, s seen) {
			eq(t, "method", s.method, "GET")
			eq(t, "path", s.path, "/api/containers")
			eq(t, "query", s.query, "status=running&status=stopped&label=tier%3Dweb")
			eq(t, "request URI", s.requestURI, "/api/containers?status=running&status=stopped&label=tier%3Dweb")
			eq(t, "host", s.host, "abc123.execute-api.eu-west-1.amazonaws.com")
			eq(t, "remote", s.remote, "203.0.113.7")
			eq(t, "proto", s.proto, "HTTP/1.1")
			eq(t, "Host header", s.header.Get("Host"), "")
		}},
		{"encoded path kept raw", event("GET", "/api/containers/a%2Fb", nil), lambdahttp.Options{}, func(t *testing.T, s seen) {
			eq(t, "path", s.path, "/api/containers/a/b")
			eq(t, "raw path", s.rawPath, "/api/containers/a%2Fb")
		}},
		{"no rawPath: http.path", event("GET", "", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.HTTP.Path = "/api/templates"
		}), lambdahttp.Options{}, func(t *testing.T, s seen) { eq(t, "path", s.path, "/api/templates") }},
		{"headers and cookies", event("POST", "/api/containers", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["content-type"] = "application/json"
			ev.Headers["accept"] = "application/json, application/problem+json"
			ev.Headers["idempotency-key"] = "k-1"
			ev.Cookies = []string{"a=1", "b=2"}
		}), lambdahttp.Options{}, func(t *testing.T, s seen) {
			eq(t, "Content-Type", s.header.Get("Content-Type"), "application/json")
			eq(t, "Accept", s.header.Get("Accept"), "application/json, application/problem+json")
			eq(t, "Idempotency-Key", s.header.Get("Idempotency-Key"), "k-1")
			eq(t, "Cookie", s.header.Get("Cookie"), "a=1; b=2")
		}},
		{"request id from API Gateway wins", event("GET", "/", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["x-request-id"] = "client-chosen"
		}), lambdahttp.Options{}, func(t *testing.T, s seen) { eq(t, "X-Request-Id", s.header.Get("X-Request-Id"), "Qx1yZg-ZFiAEMfQ=") }},
		{"request id of the client without one from API Gateway", event("GET", "/", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["x-request-id"] = "client-chosen"
			ev.RequestContext.RequestID = ""
		}), lambdahttp.Options{}, func(t *testing.T, s seen) { eq(t, "X-Request-Id", s.header.Get("X-Request-Id"), "client-chosen") }},
		{"plain body", event("POST", "/api/containers", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = `{"template":"busybox"}`
		}), lambdahttp.Options{}, func(t *testing.T, s seen) {
			eq(t, "body", s.body, `{"template":"busybox"}`)
			if s.contentLength != 22 {
				t.Errorf("ContentLength %d, want 22", s.contentLength)
			}
		}},
		{"base64 body", event("PUT", "/api/templates/x", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = base64.StdEncoding.EncodeToString([]byte("\x00\xffbinary"))
			ev.IsBase64Encoded = true
		}), lambdahttp.Options{}, func(t *testing.T, s seen) { eq(t, "body", s.body, "\x00\xffbinary") }},
		{"no authorizer: no caller", event("GET", "/api/containers", nil), lambdahttp.Options{}, func(t *testing.T, s seen) {
			if s.hasCaller {
				t.Errorf("caller %+v, want none", s.caller)
			}
		}},
		{"claims without sub: no caller", event("GET", "/", withClaims(map[string]string{"cognito:groups": "[berth-admin]"})),
			lambdahttp.Options{}, func(t *testing.T, s seen) {
				if s.hasCaller {
					t.Errorf("caller %+v, want none", s.caller)
				}
			}},
		{"user", event("GET", "/", withClaims(map[string]string{"sub": "u-1", "cognito:groups": "[users]"})),
			lambdahttp.Options{}, func(t *testing.T, s seen) { caller(t, s, identity.Caller{User: "u-1"}) }},
		{"admin by default claim", event("GET", "/", withClaims(map[string]string{"sub": "u-2", "cognito:groups": "[users berth-admin]"})),
			lambdahttp.Options{}, func(t *testing.T, s seen) { caller(t, s, identity.Caller{User: "u-2", Admin: true}) }},
		{"admin by configured claim and group", event("GET", "/", withClaims(map[string]string{"sub": "u-3", "groups": "ops,platform"})),
			lambdahttp.Options{AdminClaim: "groups", AdminGroup: "platform"}, func(t *testing.T, s seen) {
				caller(t, s, identity.Caller{User: "u-3", Admin: true})
			}},
		{"group in another claim is no admin", event("GET", "/", withClaims(map[string]string{"sub": "u-4", "groups": "berth-admin"})),
			lambdahttp.Options{}, func(t *testing.T, s seen) { caller(t, s, identity.Caller{User: "u-4"}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			tc.opts.Logger = quiet()
			resp, err := lambdahttp.New(capture(&s), tc.opts).Handle(context.Background(), tc.ev)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("Handle: %d, %v: %s", resp.StatusCode, err, resp.Body)
			}
			tc.check(t, s)
		})
	}
}

func eq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func caller(t *testing.T, s seen, want identity.Caller) {
	t.Helper()
	if !s.hasCaller || s.caller != want {
		t.Errorf("caller %+v (present %v), want %+v", s.caller, s.hasCaller, want)
	}
}

func TestGroups(t *testing.T) {
	cases := []struct {
		claim string
		want  []string
	}{
		{"", nil},
		{"  ", nil},
		{"berth-admin", []string{"berth-admin"}},
		{"[berth-admin]", []string{"berth-admin"}},
		{"[berth-admin other]", []string{"berth-admin", "other"}},
		{"[]", nil},
		{`["berth-admin","other"]`, []string{"berth-admin", "other"}},
		{`["berth-admin", 1]`, []string{"berth-admin", "1"}},
		{"berth-admin,other", []string{"berth-admin", "other"}},
		{"berth-admin, other", []string{"berth-admin", "other"}},
		{"other berth-admin", []string{"other", "berth-admin"}},
		// API Gateway separates with spaces only: a comma is part of a name
		// (issue #24: "[x,berth-admin other]" is no admin).
		{"[a, b]", []string{"a,", "b"}},
		{"[x,berth-admin other]", []string{"x,berth-admin", "other"}},
		{"[berth-admin,x]", []string{"berth-admin,x"}},
		{"[ berth-admin ]", []string{"berth-admin"}},
		{`[1,"berth-admin",{"a":1}]`, []string{"1", "berth-admin", `{"a":1}`}},
		{"[x berth-admin", []string{"[x", "berth-admin"}},
		{"berth-admins", []string{"berth-admins"}},
	}
	for _, tc := range cases {
		got := lambdahttp.Groups(tc.claim)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Groups(%q) = %q, want %q", tc.claim, got, tc.want)
		}
	}
}

func TestCallerFromClaims(t *testing.T) {
	cases := []struct {
		name   string
		claims map[string]string
		want   identity.Caller
		ok     bool
	}{
		{"nil claims", nil, identity.Caller{}, false},
		{"no sub", map[string]string{"cognito:groups": "[berth-admin]"}, identity.Caller{}, false},
		{"blank sub", map[string]string{"sub": "  "}, identity.Caller{}, false},
		{"sub with spaces around", map[string]string{"sub": " abc"}, identity.Caller{}, false},
		{"sub with a control character", map[string]string{"sub": "ab\x00c"}, identity.Caller{}, false},
		{"sub not ASCII", map[string]string{"sub": "ü"}, identity.Caller{}, false},
		{"sub of 255", map[string]string{"sub": strings.Repeat("a", 255)}, identity.Caller{User: strings.Repeat("a", 255)}, true},
		{"sub of 256", map[string]string{"sub": strings.Repeat("a", 256)}, identity.Caller{}, false},
		{"email-like sub", map[string]string{"sub": "auth0|5f7c8ec7c33c6c004bbafe82"}, identity.Caller{User: "auth0|5f7c8ec7c33c6c004bbafe82"}, true},
		{"user", map[string]string{"sub": "abc"}, identity.Caller{User: "abc"}, true},
		{"admin", map[string]string{"sub": "abc", "cognito:groups": "[berth-admin]"}, identity.Caller{User: "abc", Admin: true}, true},
		{"prefix is not membership", map[string]string{"sub": "abc", "cognito:groups": "[berth-admins xberth-admin]"}, identity.Caller{User: "abc"}, true},
		{"substring is not membership", map[string]string{"sub": "abc", "cognito:groups": "not-berth-admin"}, identity.Caller{User: "abc"}, true},
	}
	for _, tc := range cases {
		got, ok := lambdahttp.CallerFromClaims(tc.claims, lambdahttp.DefaultAdminClaim, lambdahttp.DefaultAdminGroup)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestResponse(t *testing.T) {
	cases := []struct {
		name   string
		method string
		h      http.HandlerFunc
		want   events.APIGatewayV2HTTPResponse
	}{
		{"json", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("ETag", `"3"`)
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"x","name":"é"}`)
		}, events.APIGatewayV2HTTPResponse{StatusCode: 202,
			Headers: map[string]string{"Content-Type": "application/json", "Etag": `"3"`}, Body: `{"id":"x","name":"é"}`}},
		{"implicit 200", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "ok")
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, Body: "ok"}},
		{"nothing written", "GET", func(w http.ResponseWriter, r *http.Request) {},
			events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{}}},
		{"multi-value headers joined, cookies apart", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Vary", "Accept")
			w.Header().Add("Vary", "Authorization")
			w.Header().Add("Set-Cookie", "a=1; Path=/")
			w.Header().Add("Set-Cookie", "b=2; HttpOnly")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "{}")
		}, events.APIGatewayV2HTTPResponse{StatusCode: 404,
			Headers: map[string]string{"Vary": "Accept, Authorization", "Content-Type": "application/problem+json"},
			Cookies: []string{"a=1; Path=/", "b=2; HttpOnly"}, Body: "{}"}},
		{"binary base64", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte{0, 1, 2, 0xff})
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/octet-stream"},
			Body: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), IsBase64Encoded: true}},
		{"text that is not UTF-8 is base64", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=latin1")
			_, _ = w.Write([]byte("caf\xe9"))
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/plain; charset=latin1"},
			Body: base64.StdEncoding.EncodeToString([]byte("caf\xe9")), IsBase64Encoded: true}},
		{"content type sniffed like net/http", "GET", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "<html></html>")
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/html; charset=utf-8"}, Body: "<html></html>"}},
		{"HEAD has no body", "HEAD", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		}, events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}}},
		{"first status wins", "DELETE", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			w.WriteHeader(http.StatusInternalServerError)
		}, events.APIGatewayV2HTTPResponse{StatusCode: 204, Headers: map[string]string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lambdahttp.New(tc.h, lambdahttp.Options{Logger: quiet()}).Handle(context.Background(), event(tc.method, "/x", nil))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMalformedEvent(t *testing.T) {
	reached := false
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	cases := []struct {
		name string
		ev   events.APIGatewayV2HTTPRequest
	}{
		{"no method", event("", "/api/containers", nil)},
		{"method not a token", event("GE T", "/api/containers", nil)},
		{"bad base64", event("POST", "/api/containers", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body, ev.IsBase64Encoded = "not base64!", true
		})},
		{"bad path escape", event("GET", "/api/containers/%zz", nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := lambdahttp.New(h, lambdahttp.Options{Logger: quiet()}).Handle(context.Background(), tc.ev)
			if err != nil || resp.StatusCode != http.StatusBadRequest || resp.Headers["Content-Type"] != "application/problem+json" {
				t.Fatalf("got %d %v %v, want a 400 problem", resp.StatusCode, resp.Headers, err)
			}
			var p map[string]any
			if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p["status"] != 400.0 || p["title"] == "" {
				t.Errorf("bad problem body (%v): %s", err, resp.Body)
			}
			if reached {
				t.Error("the handler was called")
			}
		})
	}
}

func TestPanicIsA500(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	resp, err := lambdahttp.New(h, lambdahttp.Options{Logger: quiet()}).Handle(context.Background(), event("GET", "/", nil))
	if err != nil || resp.StatusCode != http.StatusInternalServerError || !strings.Contains(resp.Body, "Qx1yZg-ZFiAEMfQ=") {
		t.Fatalf("got %d %v: %s", resp.StatusCode, err, resp.Body)
	}
}

// BenchmarkHandle is the adapter's own cost: an event with claims, headers
// and a JSON body in, a JSON answer out, around a handler that does nothing.
func BenchmarkHandle(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/api/containers/x")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"01JDQ7ZP3K9Y6V4M8N2B5C7D1E","status":"pending"}`)
	})
	a := lambdahttp.New(h, lambdahttp.Options{Logger: quiet()})
	ev := event("POST", "/api/containers", withClaims(map[string]string{"sub": "u-1", "cognito:groups": "[users berth-admin]"}))
	ev.Body = `{"template":"busybox","name":"web-1"}`
	ev.Headers["content-type"] = "application/json"
	ev.Headers["authorization"] = "Bearer x.y.z"
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp, _ := a.Handle(ctx, ev); resp.StatusCode != http.StatusAccepted {
			b.Fatal(resp.StatusCode)
		}
	}
}

// TestTeamClaim: the claim TeamClaim names gives the caller's team; with
// no TeamClaim, or no valid value, the caller has none.
func TestTeamClaim(t *testing.T) {
	cases := []struct {
		name, teamClaim string
		claims          map[string]string
		want            string
	}{
		{"configured", "custom:team", map[string]string{"sub": "abc", "custom:team": "data"}, "data"},
		{"not configured", "", map[string]string{"sub": "abc", "custom:team": "data"}, ""},
		{"absent", "custom:team", map[string]string{"sub": "abc"}, ""},
		{"invalid value", "custom:team", map[string]string{"sub": "abc", "custom:team": " data"}, ""},
	}
	for _, tc := range cases {
		var got seen
		a := lambdahttp.New(capture(&got), lambdahttp.Options{TeamClaim: tc.teamClaim, Logger: quiet()})
		if _, err := a.Handle(context.Background(), event(http.MethodGet, "/api/quotas/me", withClaims(tc.claims))); err != nil {
			t.Fatal(err)
		}
		if !got.hasCaller || got.caller.User != "abc" || got.caller.Team != tc.want {
			t.Errorf("%s: caller %+v (%v), want team %q", tc.name, got.caller, got.hasCaller, tc.want)
		}
	}
}

// TestOnBehalfOfClaim: the claim OnBehalfOfClaim names, "true", lets the
// caller act on behalf of users; any other value, or no claim configured,
// does not.
func TestOnBehalfOfClaim(t *testing.T) {
	cases := []struct {
		name, claim string
		claims      map[string]string
		want        bool
	}{
		{"true", "custom:service", map[string]string{"sub": "abc", "custom:service": "true"}, true},
		{"not configured", "", map[string]string{"sub": "abc", "custom:service": "true"}, false},
		{"absent", "custom:service", map[string]string{"sub": "abc"}, false},
		{"false", "custom:service", map[string]string{"sub": "abc", "custom:service": "false"}, false},
		{"another value", "custom:service", map[string]string{"sub": "abc", "custom:service": "yes"}, false},
	}
	for _, tc := range cases {
		var got seen
		a := lambdahttp.New(capture(&got), lambdahttp.Options{OnBehalfOfClaim: tc.claim, Logger: quiet()})
		if _, err := a.Handle(context.Background(), event(http.MethodGet, "/api/containers", withClaims(tc.claims))); err != nil {
			t.Fatal(err)
		}
		if !got.hasCaller || got.caller.User != "abc" || got.caller.MayActFor != tc.want {
			t.Errorf("%s: caller %+v (%v), want may act for others %v", tc.name, got.caller, got.hasCaller, tc.want)
		}
	}
}
