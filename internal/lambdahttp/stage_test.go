package lambdahttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/berth-io/berth/internal/lambdahttp"
)

// routes answers as berth's API does: POST /api/containers is 202 with a
// Location from the API's root, anything else a problem whose instance is
// the path the handler saw.
func routes(saw *string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*saw = r.URL.Path
		if r.Method == http.MethodPost && r.URL.Path == "/api/containers" {
			w.Header().Set("Location", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if r.URL.Path == "/elsewhere" {
			w.Header().Set("Location", r.URL.Query().Get("to"))
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "https://berth.dev/problems/404", "title": "Not Found",
			"status": 404, "detail": "no such route", "instance": r.URL.Path, "errors": []any{map[string]any{"field": "x"}}})
	})
}

// TestStagesAndCustomDomains: through the API's own endpoint a named stage
// is the first segment of rawPath: the handler routes without it, and the
// Location and problem instance it answers get it back, since the client
// needs it to reach them. Through a custom domain the API mapping has
// taken its path off already: nothing is taken off (a stage named "api"
// keeps the route's own /api) and nothing is added. $default has no prefix.
func TestStagesAndCustomDomains(t *testing.T) {
	const own, china, custom = "r4nd0m1d2b.execute-api.eu-west-1.amazonaws.com", "r4nd0m1d2b.execute-api.cn-north-1.amazonaws.com.cn", "berth.example.com"
	cases := []struct {
		domain, stage, method, rawPath string
		wantPath, wantLocation         string // wantLocation for the POST, the problem's instance otherwise
	}{
		{own, "prod", "POST", "/prod/api/containers", "/api/containers", "/prod/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E"},
		{own, "prod", "GET", "/prod/api/nope", "/api/nope", "/prod/api/nope"},
		{china, "prod", "GET", "/prod/api/nope", "/api/nope", "/prod/api/nope"},
		{own, "api", "POST", "/api/api/containers", "/api/containers", "/api/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E"},
		{own, "$default", "POST", "/api/containers", "/api/containers", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E"},
		{own, "$default", "GET", "/api/nope", "/api/nope", "/api/nope"},
		{custom, "prod", "POST", "/api/containers", "/api/containers", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E"},
		{custom, "api", "POST", "/api/containers", "/api/containers", "/api/containers/01JDQ7ZP3K9Y6V4M8N2B5C7D1E"},
		{custom, "api", "GET", "/api/nope", "/api/nope", "/api/nope"},
		{custom, "$default", "GET", "/api/nope", "/api/nope", "/api/nope"},
	}
	for _, file := range capturedEvents {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s %s %s %s", file, tc.domain, tc.stage, tc.method, tc.rawPath), func(t *testing.T) {
				var saw string
				a := lambdahttp.New(routes(&saw), lambdahttp.Options{Logger: quiet()})
				resp, err := a.HandleEvent(t.Context(), decode(t, patched(t, file, map[string]any{
					"rawPath": tc.rawPath, "requestContext.http.path": tc.rawPath, "requestContext.http.method": tc.method,
					"requestContext.stage": tc.stage, "requestContext.domainName": tc.domain, "body": "", "isBase64Encoded": false,
				})))
				if err != nil {
					t.Fatal(err)
				}
				if saw != tc.wantPath {
					t.Errorf("the handler saw %q, want %q", saw, tc.wantPath)
				}
				if tc.method == "POST" {
					if resp.StatusCode != http.StatusAccepted || resp.Headers["Location"] != tc.wantLocation {
						t.Errorf("%d Location %q, want 202 %q", resp.StatusCode, resp.Headers["Location"], tc.wantLocation)
					}
					return
				}
				var problem map[string]any
				if err := json.Unmarshal([]byte(resp.Body), &problem); err != nil || resp.StatusCode != http.StatusNotFound {
					t.Fatalf("%d %q: %v", resp.StatusCode, resp.Body, err)
				}
				if problem["instance"] != tc.wantLocation || problem["title"] != "Not Found" || problem["status"] != 404.0 || problem["errors"] == nil {
					t.Errorf("problem %v, want instance %q and the rest kept", problem, tc.wantLocation)
				}
			})
		}
	}
	// A Location that is not a path from the API's root is left alone.
	for _, to := range []string{"https://example.com/x", "//example.com/x", "relative"} {
		var saw string
		a := lambdahttp.New(routes(&saw), lambdahttp.Options{Logger: quiet()})
		resp, err := a.HandleEvent(t.Context(), decode(t, patched(t, capturedEvents[0], map[string]any{
			"rawPath": "/prod/elsewhere", "requestContext.http.path": "/prod/elsewhere", "rawQueryString": "to=" + to,
			"requestContext.stage": "prod", "requestContext.domainName": own,
		})))
		if err != nil || resp.Headers["Location"] != to {
			t.Errorf("Location %q became %q (%v)", to, resp.Headers["Location"], err)
		}
	}
}

// decode is what the Lambda runtime does with the payload.
func decode(t *testing.T, payload []byte) lambdahttp.Event {
	t.Helper()
	var ev lambdahttp.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestCapturedEventsClaimParsing: API Gateway's flattened array claim is
// split on spaces only, so a group whose name holds a comma is that one
// group; a sub that is not a JSON string is no subject (the number 42 is
// not the user "42").
func TestCapturedEventsClaimParsing(t *testing.T) {
	cases := []struct {
		name       string
		sub, group any
		user       string // "" : no caller
		admin      bool
	}{
		{"comma inside a group name", "alice", "[x,berth-admin other]", "alice", false},
		{"comma-led group name", "alice", "[berth-admin,x]", "alice", false},
		{"admin among others", "alice", "[x,y berth-admin]", "alice", true},
		{"JSON array keeps names whole", "alice", []any{"x,berth-admin", "other"}, "alice", false},
		{"JSON array with the group", "alice", []any{"x", "berth-admin"}, "alice", true},
		{"number sub", 42, "[berth-admin]", "", false},
		{"object sub", map[string]any{"id": "alice"}, "[berth-admin]", "", false},
		{"array sub", []any{"alice"}, "[berth-admin]", "", false},
		{"string sub of digits", "42", "[users]", "42", false},
	}
	for _, file := range capturedEvents {
		for _, tc := range cases {
			var got seen
			a := lambdahttp.New(capture(&got), lambdahttp.Options{Logger: quiet()})
			code, body := invoke(t, a, patched(t, file, map[string]any{
				"requestContext.authorizer.jwt.claims": map[string]any{"sub": tc.sub, "cognito:groups": tc.group},
			}))
			if code != 204 || got.hasCaller != (tc.user != "") || got.caller.User != tc.user || got.caller.Admin != tc.admin {
				t.Errorf("%s: %s: %d %s, caller %+v (present %v), want user %q admin=%v", file, tc.name, code, body, got.caller, got.hasCaller, tc.user, tc.admin)
			}
		}
	}
}
