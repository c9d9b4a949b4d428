package emulate

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/samtemplate"
)

// TestFrontDoorFollowsTemplateAuthorizers: the front door takes each
// route's authorizer from template.yaml, not from a list of its own: the
// probes and the OpenAPI document (GET only) are open, everything else,
// /healthz included, is the JWT authorizer's, which answers 401 before any
// function runs; a container's logs go to the LogsFunction.
func TestFrontDoorFollowsTemplateAuthorizers(t *testing.T) {
	t.Parallel()
	stack, err := samtemplate.Load("../../template.yaml", samtemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fd := &frontDoor{routes: stack.Routes, auth: config.Auth{Tokens: config.Tokens{{Token: "good-token", User: "alice"}}}}
	for _, tc := range []struct {
		method, path string
		open         bool
	}{
		{"GET", "/livez", true},
		{"GET", "/readyz", true},
		{"GET", "/api/openapi.json", true},
		{"HEAD", "/livez", false},
		{"POST", "/readyz", false},
		{"GET", "/healthz", false},
		{"GET", "/api/containers", false},
		{"GET", "/livez/x", false},
		// The web console's static files (the page signs in itself).
		{"GET", "/", true},
		{"GET", "/console", true},
		{"GET", "/console/app.js", true},
		{"POST", "/console", false},
	} {
		route, _ := fd.route(tc.method, tc.path)
		if route == nil {
			t.Errorf("%s %s: no route", tc.method, tc.path)
			continue
		}
		if route.Authorized == tc.open {
			t.Errorf("%s %s: route %s authorized=%v, want %v", tc.method, tc.path, route.Name, route.Authorized, !tc.open)
		}
		if route.Function != "ApiFunction" {
			t.Errorf("%s %s: to %s, want the ApiFunction", tc.method, tc.path, route.Function)
		}
		if !tc.open {
			w := httptest.NewRecorder()
			fd.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %d %s, want the authorizer's 401", tc.method, tc.path, w.Code, w.Body)
			}
		}
	}
	// A container's logs and stats come from the function that reaches the
	// runtimes, behind the same authorizer; any other method or path stays
	// the api's.
	for _, tc := range []struct{ method, path, function string }{
		{"GET", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/logs", "LogsFunction"},
		{"GET", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/stats", "LogsFunction"},
		{"POST", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/stats", "ApiFunction"},
		{"POST", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/exec", "ExecFunction"},
		{"GET", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/exec", "ApiFunction"},
		{"POST", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/logs", "ApiFunction"},
		{"GET", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E/logs/x", "ApiFunction"},
		{"GET", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E", "ApiFunction"},
	} {
		route, _ := fd.route(tc.method, tc.path)
		if route == nil || !route.Authorized || route.Function != tc.function {
			t.Errorf("%s %s: route %+v, want the %s behind the authorizer", tc.method, tc.path, route, tc.function)
		}
	}
}
