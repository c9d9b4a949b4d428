package lambdahttp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/lambdahttp"
)

// capturedEvents are API Gateway events captured by others (testdata/README.md).
var capturedEvents = []string{
	"aws-lambda-go-apigw-v2-request-jwt-authorizer.json",
	"powertools-python-apiGatewayProxyV2Event.json",
}

// patched returns a captured event with the given fields of its JSON set
// (paths as dot-separated keys), as API Gateway would send it.
func patched(t *testing.T, file string, set map[string]any) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for path, v := range set {
		m := doc
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// invoke decodes payload as the Lambda runtime does (json.Unmarshal into
// the handler's argument) and calls HandleEvent.
func invoke(t *testing.T, a *lambdahttp.Adapter, payload []byte) (int, string) {
	t.Helper()
	var ev lambdahttp.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatalf("decoding the event failed the invocation: %v", err)
	}
	resp, err := a.HandleEvent(context.Background(), ev)
	if err != nil {
		t.Fatalf("HandleEvent returned an error (a Lambda error, a 500 at the gateway): %v", err)
	}
	return resp.StatusCode, resp.Body
}

// TestCapturedEventsNamedStage: behind a named stage, rawPath carries the
// stage and the handler still sees the route; under $default, or when
// the path only begins like the stage, the path is left alone.
func TestCapturedEventsNamedStage(t *testing.T) {
	cases := []struct{ stage, rawPath, want string }{
		{"prod", "/prod/api/containers", "/api/containers"},
		{"prod", "/prod/api/containers/01J/events", "/api/containers/01J/events"},
		{"prod", "/prod", "/"},
		{"prod", "/production/api/containers", "/production/api/containers"},
		{"prod", "/api/containers", "/api/containers"}, // a custom domain's mapping took the stage off already
		{"$default", "/api/containers", "/api/containers"},
	}
	for _, file := range capturedEvents {
		for _, tc := range cases {
			var got seen
			a := lambdahttp.New(capture(&got), lambdahttp.Options{Logger: quiet()})
			code, body := invoke(t, a, patched(t, file, map[string]any{
				"rawPath": tc.rawPath, "requestContext.http.path": tc.rawPath, "requestContext.stage": tc.stage,
			}))
			if code != 204 || got.path != tc.want {
				t.Errorf("%s: stage %s rawPath %s: %d %s, handler saw %q, want %q", file, tc.stage, tc.rawPath, code, body, got.path, tc.want)
			}
		}
	}
}

// TestCapturedEventsClaimShapes: claims that are JSON arrays, numbers,
// booleans or objects decode; the admin group is found in an array claim
// and in API Gateway's flattened "[a b]" string.
func TestCapturedEventsClaimShapes(t *testing.T) {
	cases := []struct {
		name   string
		groups any
		admin  bool
	}{
		{"array", []any{"ops", "berth-admin"}, true},
		{"array without the group", []any{"ops"}, false},
		{"flattened string", "[ops berth-admin]", true},
		{"number", 42, false},
		{"object", map[string]any{"berth-admin": true}, false},
		{"null", nil, false},
	}
	for _, file := range capturedEvents {
		for _, tc := range cases {
			var got seen
			a := lambdahttp.New(capture(&got), lambdahttp.Options{Logger: quiet()})
			code, body := invoke(t, a, patched(t, file, map[string]any{
				"requestContext.authorizer.jwt.claims": map[string]any{
					"sub": "alice", "cognito:groups": tc.groups, "auth_time": 1583348638, "email_verified": true,
					"address": map[string]any{"country": "NL"},
				},
			}))
			if code != 204 || !got.hasCaller || got.caller.User != "alice" || got.caller.Admin != tc.admin {
				t.Errorf("%s: groups %s: %d %s, caller %+v (present %v), want alice admin=%v", file, tc.name, code, body, got.caller, got.hasCaller, tc.admin)
			}
		}
	}
}

// TestUndecodableEventAnswered: an event whose other fields have the
// wrong type is a 400 problem, not a failed invocation.
func TestUndecodableEventAnswered(t *testing.T) {
	var got seen
	a := lambdahttp.New(capture(&got), lambdahttp.Options{Logger: quiet()})
	for _, payload := range [][]byte{
		patched(t, capturedEvents[0], map[string]any{"body": 5}),
		patched(t, capturedEvents[1], map[string]any{"requestContext.http": "GET /"}),
		[]byte(`[1,2,3]`),
	} {
		if code, body := invoke(t, a, payload); code != 400 {
			t.Errorf("%.60s: %d %s, want 400", payload, code, body)
		}
	}
}
