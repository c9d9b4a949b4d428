package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestGroupsAPI: the group routes on both stores, owner-scoped, with the
// instances moved as the workers would move them.
func TestGroupsAPI(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPIGroups(t, b, 50, manager.GroupPolicies{OnFinished: config.CleanupStop, ResetAllowed: true}, nil)
		queued := a.create(alice, `{"template":"busybox","group":"run-1"}`)
		running := a.create(alice, `{"template":"busybox","group":"run-1"}`)
		a.drive(running.ID, fsm.Running)
		other := a.create(alice, `{"template":"busybox","group":"run-2"}`)
		a.create(bob, `{"template":"busybox","group":"run-1"}`)

		for _, c := range []struct {
			name, method, path, token, body string
			status                          int
			want                            []string
		}{
			{"list", "GET", "/api/groups", alice, "", 200, []string{`"group":"run-1"`, `"total":2`, `"pending":1`, `"running":1`, `"group":"run-2"`}},
			{"list page", "GET", "/api/groups?limit=1", alice, "", 200, []string{`"group":"run-1"`, `"next_cursor":"`}},
			{"list bad limit", "GET", "/api/groups?limit=0", alice, "", 400, []string{"limit"}},
			{"list bad cursor", "GET", "/api/groups?cursor=abc", alice, "", 400, []string{"cursor"}},
			{"list another owner, not admin", "GET", "/api/groups?owner=bob", alice, "", 400, []string{"admin only"}},
			{"list another owner, admin", "GET", "/api/groups?owner=bob", admin, "", 200, []string{`"owner":"bob"`, `"total":1`}},
			{"get", "GET", "/api/groups/run-1", alice, "", 200, []string{`"members":[`, queued.ID, running.ID, `"counts":{`}},
			{"get, bob's own of the same name", "GET", "/api/groups/run-1", bob, "", 200, []string{`"owner":"bob"`, `"total":1`}},
			{"get unknown", "GET", "/api/groups/nope", alice, "", 404, nil},
			{"get invalid name", "GET", "/api/groups/-bad-", alice, "", 404, nil},
			{"get unauthenticated", "GET", "/api/groups/run-1", "", "", 401, nil},
			{"finish wrong method", "GET", "/api/groups/run-1/finish", alice, "", 405, nil},
			{"finish without outcome", "POST", "/api/groups/run-1/finish", alice, `{}`, 422, []string{"outcome"}},
			{"finish bad outcome", "POST", "/api/groups/run-1/finish", alice, `{"outcome":"done"}`, 422, []string{"outcome"}},
			{"finish unknown field", "POST", "/api/groups/run-1/finish", alice, `{"outcome":"failed","x":1}`, 400, nil},
			{"finish", "POST", "/api/groups/run-1/finish", alice, `{"outcome":"failed"}`, 202,
				[]string{`"policy":"stop"`, `"outcome":"failed"`, `"action":"cancelled"`, `"action":"cleanup_requested"`}},
			{"reset", "POST", "/api/groups/run-2/reset", alice, "", 202, []string{`"policy":"delete"`, other.ID, `"action":"delete_requested"`}},
			{"reset empty group", "POST", "/api/groups/run-3/reset", alice, "", 202, []string{`"members":[]`}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := a.mustStatus(a.do(c.method, c.path, c.token, c.body, nil), c.status)
				for _, w := range c.want {
					if !strings.Contains(r.Body.String(), w) {
						t.Fatalf("body lacks %s: %s", w, r.Body)
					}
				}
			})
		}
		if in := a.get(queued.ID); in.Status != fsm.Failed || !strings.Contains(in.StatusReason, "cancelled") {
			t.Fatalf("queued member after finish: %+v", in)
		}
		if in := a.get(running.ID); in.Status != fsm.Running {
			t.Fatalf("running member after finish: %+v (its stop follows through the outbox)", in)
		}
		if in := a.get(other.ID); in.Status != fsm.DeletePending {
			t.Fatalf("reset member: %+v", in)
		}
		// bob's group of the same name was not touched.
		r := a.mustStatus(a.do("GET", "/api/groups/run-1", bob, "", nil), 200)
		if !strings.Contains(r.Body.String(), `"pending":1`) {
			t.Fatalf("bob's group: %s", r.Body)
		}
		off := newAPI(t, b, 50)
		off.create(alice, `{"template":"busybox","group":"g"}`)
		p := off.mustStatus(off.do("POST", "/api/groups/g/reset", alice, "", nil), http.StatusConflict).problem
		if !strings.Contains(p.Detail, "cleanup_dag_node_containers_before_start") {
			t.Fatalf("409: %+v", p)
		}
	})
}

func (a *api) get(id string) container.Instance {
	a.t.Helper()
	in, err := a.store.GetInstance(context.Background(), id)
	if err != nil {
		a.t.Fatal(err)
	}
	return in
}
