package emulate_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestQuotas: through the emulated stack (the api function reading the
// deployment's quotas and the overrides table, the front door's tokens as
// JWT claims), each quota refuses exactly at its limit with the problem
// naming it, alice and carol share team data's override, an override
// takes effect without a restart, and a service acting on behalf of a user
// is charged to that user while a caller without the claim is refused.
func TestQuotas(t *testing.T) {
	t.Parallel()
	st := start(t, setup{quotas: map[string]any{"default": map[string]any{"instances": 3, "running": 2}}})
	st.putTemplate("sleeper", []string{"sleep", "300"})
	create := func(token string, extra map[string]any) response {
		body := map[string]any{"template": "sleeper"}
		for k, v := range extra {
			body[k] = v
		}
		return st.do(http.MethodPost, "/api/containers", token, body)
	}
	accepted := func(what string, r response) {
		t.Helper()
		if r.status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	refused := func(what string, r response, quota, scope, subject, limit, used string) {
		t.Helper()
		var p struct {
			Type, Quota, Scope, Subject string
			Limit, Used                 json.Number
		}
		_ = json.Unmarshal(r.body, &p)
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || !strings.HasSuffix(p.Type, "quota-exceeded") ||
			p.Quota != quota || p.Scope != scope || p.Subject != subject || p.Limit.String() != limit || p.Used.String() != used {
			t.Fatalf("%s: %d %s; want 429 over %s of %s %s, limit %s, used %s", what, r.status, r.body, quota, scope, subject, limit, used)
		}
	}
	accepted("alice's first", create(aliceToken, nil))
	accepted("alice's second", create(aliceToken, nil))
	refused("alice's third", create(aliceToken, nil), "running", "user", "alice", "2", "2")

	if r := st.do(http.MethodPut, "/api/quotas/teams/data", adminToken, map[string]any{"instances": 3}); r.status != http.StatusOK {
		t.Fatalf("team override: %d %s", r.status, r.body)
	}
	accepted("carol's first", create(carolToken, nil))
	refused("carol's second, the team full", create(carolToken, nil), "instances", "team", "data", "3", "3")

	if r := create(bobToken, map[string]any{"on_behalf_of": "dave"}); r.status != http.StatusForbidden {
		t.Fatalf("bob on behalf of dave: %d %s, want 403", r.status, r.body)
	}
	accepted("dave's first, by the engine", create(engineToken, map[string]any{"on_behalf_of": "dave"}))
	accepted("dave's second, by the engine", create(engineToken, map[string]any{"on_behalf_of": "dave"}))
	refused("dave's third, by the engine", create(engineToken, map[string]any{"on_behalf_of": "dave"}), "running", "user", "dave", "2", "2")
	refused("carol's, by the engine", create(engineToken, map[string]any{"on_behalf_of": "carol", "on_behalf_of_team": "data"}),
		"instances", "team", "data", "3", "3")
	accepted("the engine's own", create(engineToken, nil))

	if r := st.do(http.MethodPut, "/api/quotas/teams/data", adminToken, map[string]any{"instances": 5}); r.status != http.StatusOK {
		t.Fatalf("raising the team override: %d %s", r.status, r.body)
	}
	accepted("carol's second, the override raised", create(carolToken, nil))
	if r := st.do(http.MethodDelete, "/api/quotas/teams/data", adminToken, nil); r.status != http.StatusNoContent {
		t.Fatalf("removing the team override: %d %s", r.status, r.body)
	}
	refused("erin of data's, by the engine, the default again", create(engineToken, map[string]any{"on_behalf_of": "erin", "on_behalf_of_team": "data"}),
		"instances", "team", "data", "3", "4")
}
