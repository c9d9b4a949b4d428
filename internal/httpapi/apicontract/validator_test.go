package apicontract_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/httpapi/apicontract"
)

const instance = `{"id":"01KBCWM2Q5Z3V1S8J7T4XR9D6E","name":"web-1","owner":"alice","template":"busybox","labels":{},
 "runtime":"docker","image":"busybox:1","status":"pending","created_at":"2026-12-01T08:30:12Z",
 "updated_at":"2026-12-01T08:30:12Z","version":1}`

const problem404 = `{"type":"https://berth.dev/problems/404","title":"Not Found","status":404,"instance":"/x"}`

// TestCheck: the validator refuses each kind of departure from the
// document, and accepts the exchange that departs in none.
func TestCheck(t *testing.T) {
	v := apicontract.Shared(t)
	instanceHeaders := func(extra ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}, "Etag": {`"1"`}, "Cache-Control": {"no-store"}}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}
	problemHeaders := http.Header{"Content-Type": {"application/problem+json"}, "X-Request-Id": {"r1"}}
	cases := []struct {
		name         string
		method, path string
		reqBody      string
		status       int
		header       http.Header
		body         string
		wantErr      string // "" = valid
	}{
		{"documented", "GET", "/api/containers/01KBCWM2Q5Z3V1S8J7T4XR9D6E", "", 200, instanceHeaders(), instance, ""},
		{"undocumented body field", "GET", "/api/containers/x", "", 200, instanceHeaders(),
			strings.Replace(instance, `"version":1`, `"version":1,"spec":{}`, 1), `"spec" is unsupported`},
		{"missing required field", "GET", "/api/containers/x", "", 200, instanceHeaders(),
			strings.Replace(instance, `"owner":"alice",`, ``, 1), `"owner"`},
		{"undocumented header", "GET", "/api/containers/x", "", 200, instanceHeaders("X-Debug", "1"), instance, "X-Debug"},
		{"missing required header", "GET", "/api/containers/x", "", 200,
			http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}}, instance, "ETag"},
		{"undocumented status", "GET", "/api/containers/x", "", 418, problemHeaders, problem404, "status is not supported"},
		{"undocumented media type", "GET", "/api/containers/x", "", 200, instanceHeaders("Content-Type", "text/plain"), instance, "text/plain"},
		{"refused request accepted", "POST", "/api/containers", `{"template":"t","privileged":true}`, 202,
			instanceHeaders("Location", "/api/containers/x"), instance, "refuses this request"},
		{"refused request refused", "POST", "/api/containers", `{"template":"t","privileged":true}`, 400, problemHeaders,
			`{"type":"t","title":"Bad Request","status":400,"errors":[{"field":"privileged","message":"unknown field"}]}`, ""},
		{"undocumented problem field", "POST", "/api/containers", `{"template":"t"}`, 400, problemHeaders,
			`{"type":"t","title":"Bad Request","status":400,"stack":"x"}`, `"stack" is unsupported`},
		{"logs as NDJSON", "GET", "/api/containers/x/logs", "", 200,
			http.Header{"Content-Type": {"application/x-ndjson"}, "X-Request-Id": {"r1"}},
			"{\"stream\":\"stdout\",\"time\":\"2026-12-01T08:30:12Z\",\"line\":\"a\"}\n{\"time\":\"2026-12-01T08:30:12Z\",\"line\":\"b\"}\n", ""},
		{"logs NDJSON line without its time", "GET", "/api/containers/x/logs", "", 200,
			http.Header{"Content-Type": {"application/x-ndjson"}, "X-Request-Id": {"r1"}},
			"{\"stream\":\"stdout\",\"line\":\"a\"}\n", `"time"`},
		{"logs NDJSON that is not JSON", "GET", "/api/containers/x/logs", "", 200,
			http.Header{"Content-Type": {"application/x-ndjson"}, "X-Request-Id": {"r1"}}, "hello\n", "NDJSON line 1"},
		{"logs as text", "GET", "/api/containers/x/logs?tail=2", "", 200,
			http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Request-Id": {"r1"}, "Berth-Next-Since": {"2026-12-01T08:30:12.5Z"}}, "a\nb\n", ""},
		{"unknown path answered", "GET", "/api/nothing", "", 200, instanceHeaders(), instance, "not in the document"},
		{"unknown path 404", "GET", "/api/nothing", "", 404, problemHeaders, problem404, ""},
		{"unknown path 404 with a stray field", "GET", "/api/nothing", "", 404, problemHeaders,
			strings.Replace(problem404, `"status"`, `"trace":"x","status"`, 1), `"trace" is unsupported`},
		{"405 with the document's methods", "PATCH", "/api/containers", "", 405,
			http.Header{"Content-Type": {"application/problem+json"}, "X-Request-Id": {"r1"}, "Allow": {"GET, POST"}}, problem404, ""},
		{"405 with other methods", "PATCH", "/api/containers", "", 405,
			http.Header{"Content-Type": {"application/problem+json"}, "X-Request-Id": {"r1"}, "Allow": {"GET"}}, problem404, "Allow"},
		{"204 with a body", "DELETE", "/api/templates/t", "", 204, http.Header{"X-Request-Id": {"r1"}}, `{}`, "has a body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.reqBody))
			if tc.reqBody != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			err := v.Check(context.Background(), apicontract.Exchange{Request: req, RequestBody: []byte(tc.reqBody),
				Status: tc.status, Header: tc.header, Body: []byte(tc.body)})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("valid exchange refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted; want an error naming %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not name %q", err, tc.wantErr)
			}
		})
	}
}

// TestDocumentIsValid: the document loads, passes OpenAPI 3.0 validation
// (its examples checked against their schemas) and converts to JSON.
func TestDocumentIsValid(t *testing.T) {
	doc := apicontract.Shared(t).Doc()
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi %q, want 3.0.3 (what API Gateway imports and oapi-codegen reads)", doc.OpenAPI)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId (generated clients name their methods by it)", method, path)
			}
		}
	}
}
