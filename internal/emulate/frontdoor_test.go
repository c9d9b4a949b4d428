package emulate_test

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestFrontDoor checks, through the emulated HTTP API, the behaviours that
// do not depend on the local server: the JWT authorizer's 401s, ownership,
// bad input and admission.
func TestFrontDoor(t *testing.T) {
	t.Parallel()
	st := start(t, setup{container: map[string]any{"create_queue_max_pending": 2}})
	aliceID := st.create(aliceToken, "busybox", "a")

	t.Run("authorizer", func(t *testing.T) {
		for _, tc := range []struct {
			name, token string
		}{{"missing token", ""}, {"unknown token", "not-a-token"}} {
			r := st.do(http.MethodGet, "/api/containers", tc.token, nil)
			if r.status != http.StatusUnauthorized || r.json(t)["message"].(string) != "Unauthorized" {
				t.Errorf("%s: %d %s, want 401 {\"message\":\"Unauthorized\"}", tc.name, r.status, r.body)
			}
		}
	})
	t.Run("openapi document without a token", func(t *testing.T) {
		// template.yaml's one route without the authorizer, to the api function.
		r := st.do(http.MethodGet, "/api/openapi.json", "", nil)
		if r.status != http.StatusOK || r.json(t)["openapi"] != "3.0.3" {
			t.Errorf("GET /api/openapi.json without a token: %d %.200s", r.status, r.body)
		}
		if r := st.do(http.MethodPost, "/api/openapi.json", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("POST /api/openapi.json without a token: %d %s, want the authorizer's 401 (only GET is open)", r.status, r.body)
		}
	})
	t.Run("probes without a token", func(t *testing.T) {
		// template.yaml routes GET /livez and GET /readyz without the
		// authorizer; /healthz is the admins' (401 at the gateway, 403 for
		// a user).
		if r := st.do(http.MethodGet, "/livez", "", nil); r.status != http.StatusOK || r.json(t)["status"] != "ok" {
			t.Errorf("GET /livez without a token: %d %s", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/readyz", "", nil); r.status != http.StatusOK || r.json(t)["status"] != "ready" {
			t.Errorf("GET /readyz without a token: %d %s", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/healthz", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("GET /healthz without a token: %d %s, want the authorizer's 401", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/healthz", aliceToken, nil); r.status != http.StatusForbidden {
			t.Errorf("GET /healthz as a user: %d %s, want 403", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/healthz", adminToken, nil); r.status != http.StatusOK {
			t.Errorf("GET /healthz as an admin: %d %s", r.status, r.body)
		}
	})
	t.Run("ownership", func(t *testing.T) {
		if r := st.do(http.MethodGet, "/api/containers/"+aliceID, bobToken, nil); r.status != http.StatusNotFound {
			t.Errorf("bob gets alice's container: %d %s", r.status, r.body)
		}
		if r := st.do(http.MethodDelete, "/api/containers/"+aliceID, bobToken, nil); r.status != http.StatusNotFound {
			t.Errorf("bob deletes alice's container: %d %s", r.status, r.body)
		}
		r := st.do(http.MethodGet, "/api/containers", bobToken, nil)
		if r.status != http.StatusOK || len(r.json(t)["items"].([]any)) != 0 {
			t.Errorf("bob's list: %d %s", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/api/containers/"+aliceID, adminToken, nil); r.status != http.StatusOK {
			t.Errorf("the admin gets alice's container: %d %s", r.status, r.body)
		}
		if r := st.do(http.MethodPut, "/api/templates/x", aliceToken, map[string]any{"runtime": "docker", "image": "x"}); r.status != http.StatusForbidden {
			t.Errorf("alice puts a template: %d %s", r.status, r.body)
		}
	})
	t.Run("logs are served by the logs function", func(t *testing.T) {
		// The route goes to the LogsFunction, which reaches the runtimes
		// (the api function, holding none, would answer 501): the
		// container's lines, or 409 while it is not on its runtime yet;
		// others still 404.
		r := st.do(http.MethodGet, "/api/containers/"+aliceID+"/logs?tail=10", aliceToken, nil)
		if r.status != http.StatusOK && r.status != http.StatusConflict {
			t.Errorf("logs on the emulated stack: %d %s, want 200 or 409 from the logs function", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/api/containers/"+aliceID+"/logs", bobToken, nil); r.status != http.StatusNotFound {
			t.Errorf("bob reads alice's logs: %d %s", r.status, r.body)
		}
	})
	t.Run("stats are served by the logs function", func(t *testing.T) {
		// As the logs: a reading, or 409 while the container is not
		// running; never the api function's 501. Others still 404.
		r := st.do(http.MethodGet, "/api/containers/"+aliceID+"/stats", aliceToken, nil)
		if r.status != http.StatusOK && r.status != http.StatusConflict {
			t.Errorf("stats on the emulated stack: %d %s, want 200 or 409 from the logs function", r.status, r.body)
		}
		if r := st.do(http.MethodGet, "/api/containers/"+aliceID+"/stats", bobToken, nil); r.status != http.StatusNotFound {
			t.Errorf("bob reads alice's stats: %d %s", r.status, r.body)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, path string
			body               any
			want               int
		}{
			{"bad JSON", http.MethodPost, "/api/containers", `{"template":`, http.StatusBadRequest},
			{"unknown field", http.MethodPost, "/api/containers", `{"template":"busybox","bogus":1}`, http.StatusBadRequest},
			{"no such template", http.MethodPost, "/api/containers", map[string]any{"template": "nope"}, http.StatusUnprocessableEntity},
			{"bad id", http.MethodGet, "/api/containers/not-an-id", nil, http.StatusNotFound},
		} {
			r := st.do(tc.method, tc.path, aliceToken, tc.body)
			if r.status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
			}
		}
	})
	t.Run("admission", func(t *testing.T) {
		st.wait(aliceToken, aliceID, "running", time.Minute)
		// create_queue_max_pending is 2: of a burst of 6 creates, those
		// beyond 2 unfinished ones are refused with 429 and Retry-After.
		var mu sync.Mutex
		codes := map[int]int{}
		var retryAfter string
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				r := st.do(http.MethodPost, "/api/containers", aliceToken, map[string]any{"template": "busybox"})
				mu.Lock()
				defer mu.Unlock()
				codes[r.status]++
				if r.status == http.StatusTooManyRequests {
					retryAfter = r.header.Get("Retry-After")
				}
			})
		}
		wg.Wait()
		if codes[http.StatusAccepted] < 1 || codes[http.StatusTooManyRequests] < 1 || codes[http.StatusAccepted]+codes[http.StatusTooManyRequests] != 6 {
			t.Errorf("burst of 6 with max pending 2: %v, want some 202 and some 429 only", codes)
		}
		if codes[http.StatusTooManyRequests] > 0 && retryAfter == "" {
			t.Errorf("429 without Retry-After")
		}
	})
}
