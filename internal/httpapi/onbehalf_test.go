package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestOnBehalfOf: a service with the on_behalf_of claim creates for a user
// (owner, team, quota and history the user's, the service the actor) and
// acts on what it made through the query parameter; a caller without the
// claim is refused, and a malformed user is a 400 naming the field.
func TestOnBehalfOf(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newQuotaAPI(t, b)
		var made container.Instance
		keep := func(t *testing.T, _ *api, r *resp) { made = decode[container.Instance](t, r) }
		inst := func() string { return "/api/containers/" + made.ID }
		asAlice := func() string { return inst() + "?on_behalf_of=alice" }
		runQuotaSteps(t, a, []quotaStep{
			{name: "a user without the claim", method: "POST", path: "/api/containers", token: bob,
				body: `{"template":"busybox","on_behalf_of":"alice"}`, status: http.StatusForbidden},
			{name: "an admin without the claim", method: "POST", path: "/api/containers", token: admin,
				body: `{"template":"busybox","on_behalf_of":"alice"}`, status: http.StatusForbidden},
			{name: "query without the claim", method: "GET", path: "/api/containers?on_behalf_of=alice", token: bob, status: http.StatusForbidden},
			{name: "empty user with a team", method: "POST", path: "/api/containers", token: engine,
				body: `{"template":"busybox","on_behalf_of_team":"data"}`, status: http.StatusBadRequest, check: wantField("on_behalf_of")},
			{name: "user with a space", method: "POST", path: "/api/containers", token: engine,
				body: `{"template":"busybox","on_behalf_of":"al ice"}`, status: http.StatusBadRequest, check: wantField("on_behalf_of")},
			{name: "team without user in the query", method: "GET", path: "/api/containers?on_behalf_of_team=data", token: engine,
				status: http.StatusBadRequest, check: wantField("on_behalf_of")},
			{name: "create for alice", method: "POST", path: "/api/containers", token: engine,
				body: `{"template":"busybox","on_behalf_of":"alice","on_behalf_of_team":"data"}`, status: http.StatusAccepted,
				check: func(t *testing.T, a *api, r *resp) {
					keep(t, a, r)
					if made.Owner != "alice" || made.Team != "data" {
						t.Errorf("owner %q team %q, want alice of data", made.Owner, made.Team)
					}
				}},
			{name: "alice sees it", method: "GET", at: inst, token: alice, status: http.StatusOK},
			{name: "the engine alone does not", method: "GET", at: inst, token: engine, status: http.StatusNotFound},
			{name: "the engine as alice does", method: "GET", at: asAlice, token: engine, status: http.StatusOK},
			{name: "the history names both", method: "GET", at: func() string { return inst() + "/events" }, token: alice, status: http.StatusOK,
				check: func(t *testing.T, a *api, r *resp) {
					evs := decode[struct{ Items []container.Event }](t, r).Items
					if len(evs) == 0 || evs[0].Actor != "engine" || evs[0].OnBehalfOf != "alice" {
						t.Errorf("first event %+v, want actor engine on behalf of alice", evs)
					}
				}},
			{name: "a second for alice", method: "POST", path: "/api/containers?on_behalf_of=alice&on_behalf_of_team=data", token: engine,
				body: create1, status: http.StatusAccepted},
			{name: "alice's pending quota is hers", method: "POST", path: "/api/containers", token: alice, body: create1,
				status: http.StatusTooManyRequests, quota: "pending", scope: "user", subject: "alice", limit: "2", used: "2"},
			{name: "and charged as hers to the engine too", method: "POST", path: "/api/containers", token: engine,
				body: `{"template":"busybox","on_behalf_of":"alice"}`, status: http.StatusTooManyRequests,
				quota: "pending", scope: "user", subject: "alice", limit: "2", used: "2"},
			{name: "the engine's own quota is untouched", method: "POST", path: "/api/containers", token: engine, body: create1, status: http.StatusAccepted},
			{name: "the engine deletes for alice", method: "DELETE", at: asAlice, token: engine, status: http.StatusAccepted,
				check: func(t *testing.T, a *api, r *resp) {
					got := decode[container.Instance](t, r)
					if got.StatusReason != "delete requested by engine" {
						t.Errorf("status reason %q, want the engine named", got.StatusReason)
					}
				}},
		})
	})
}
