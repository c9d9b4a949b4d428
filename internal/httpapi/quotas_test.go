package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// Callers of the quota tests besides admin, alice and bob: alice and
// carol are of team data; engine is a service that may act on behalf of
// users.
const (
	carol  = "tok-carol"
	engine = "tok-engine"
)

// newQuotaAPI is newAPI with quotas.default {instances 4, running 3,
// pending 2} and teams.
func newQuotaAPI(t *testing.T, b teststores.Backend) *api {
	t.Helper()
	s := b.Open(t, time.Now)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: s, MaxPending: 50, Runtimes: []string{"docker"},
		BindRoots: []string{"/srv/berth"}, Logger: logger, WaitPoll: 5 * time.Millisecond,
		Quotas: container.QuotaUse{Instances: 4, Running: 3, Pending: 2}})
	h := httpapi.New(httpapi.Options{Manager: m, Logger: logger, WaitMax: 25 * time.Second,
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: admin, User: "root", Admin: true},
			{Token: alice, User: "alice", Team: "data"},
			{Token: bob, User: "bob"},
			{Token: carol, User: "carol", Team: "data"},
			{Token: engine, User: "engine", OnBehalfOf: true},
		})})
	a := &api{t: t, h: apicontract.Handler(t, h), m: m, store: s}
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusCreated)
	return a
}

// quotaStep is one request of a quota scenario and what it must answer.
type quotaStep struct {
	name                string
	method, path, token string
	body                string
	status              int
	// at, if set, gives the path when the step runs (an id known then).
	at func() string
	// quota, scope, subject, limit, used: the refusal a 429 must carry.
	quota, scope, subject, limit, used string
	// check, if set, looks further at the answer.
	check func(t *testing.T, a *api, r *resp)
}

const create1 = `{"template":"busybox"}`

func runQuotaSteps(t *testing.T, a *api, steps []quotaStep) {
	t.Helper()
	for _, st := range steps {
		if st.at != nil {
			st.path = st.at()
		}
		r := a.do(st.method, st.path, st.token, st.body, nil)
		if r.Code != st.status {
			t.Fatalf("%s: %s %s: %d, want %d: %s", st.name, st.method, st.path, r.Code, st.status, r.Body)
		}
		if st.quota != "" {
			p := r.problem
			if !strings.HasSuffix(p.Type, "quota-exceeded") || r.Header().Get("Retry-After") == "" ||
				p.Quota != st.quota || p.Scope != st.scope || p.Subject != st.subject || p.Limit.String() != st.limit || p.Used.String() != st.used {
				t.Errorf("%s: problem %+v (Retry-After %q), want quota %s of %s %s, limit %s, used %s",
					st.name, p, r.Header().Get("Retry-After"), st.quota, st.scope, st.subject, st.limit, st.used)
			}
		}
		if st.check != nil {
			st.check(t, a, r)
		}
	}
}

// TestQuotaAdminRoutes: the override routes are for admins, check their
// input, and put, get, list and delete.
func TestQuotaAdminRoutes(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newQuotaAPI(t, b)
		runQuotaSteps(t, a, []quotaStep{
			{name: "list by a user", method: "GET", path: "/api/quotas", token: alice, status: http.StatusForbidden},
			{name: "put by a user", method: "PUT", path: "/api/quotas/users/alice", token: alice, body: `{"instances":9}`, status: http.StatusForbidden},
			{name: "get by a user", method: "GET", path: "/api/quotas/teams/data", token: alice, status: http.StatusForbidden},
			{name: "delete by a user", method: "DELETE", path: "/api/quotas/users/bob", token: alice, status: http.StatusForbidden},
			{name: "no override yet", method: "GET", path: "/api/quotas/users/alice", token: admin, status: http.StatusNotFound},
			{name: "negative", method: "PUT", path: "/api/quotas/users/alice", token: admin, body: `{"running":-1}`, status: http.StatusUnprocessableEntity,
				check: wantField("running")},
			{name: "bad memory", method: "PUT", path: "/api/quotas/users/alice", token: admin, body: `{"memory":"8GB!"}`, status: http.StatusUnprocessableEntity,
				check: wantField("memory")},
			{name: "cpus not a number", method: "PUT", path: "/api/quotas/users/alice", token: admin, body: `{"cpus":"lots"}`, status: http.StatusBadRequest},
			{name: "unknown field", method: "PUT", path: "/api/quotas/users/alice", token: admin, body: `{"gpus":1}`, status: http.StatusBadRequest},
			{name: "name with spaces", method: "PUT", path: "/api/quotas/teams/%20data", token: admin, body: `{"instances":1}`, status: http.StatusUnprocessableEntity},
			{name: "put user", method: "PUT", path: "/api/quotas/users/alice", token: admin, body: `{"instances":20,"running":5,"cpus":2.5,"memory":"8Gi"}`, status: http.StatusOK,
				check: func(t *testing.T, a *api, r *resp) {
					got := decode[map[string]any](t, r)
					if got["kind"] != "user" || got["name"] != "alice" || got["instances"] != 20.0 || got["cpus"] != 2.5 || got["memory"] != "8Gi" {
						t.Errorf("put answered %v", got)
					}
				}},
			{name: "put team", method: "PUT", path: "/api/quotas/teams/data", token: admin, body: `{"instances":4}`, status: http.StatusOK},
			{name: "get user", method: "GET", path: "/api/quotas/users/alice", token: admin, status: http.StatusOK,
				check: func(t *testing.T, a *api, r *resp) {
					if got := decode[map[string]any](t, r); got["running"] != 5.0 || got["cpus"] != 2.5 {
						t.Errorf("get answered %v", got)
					}
				}},
			{name: "list", method: "GET", path: "/api/quotas", token: admin, status: http.StatusOK,
				check: func(t *testing.T, a *api, r *resp) {
					got := decode[struct {
						Default map[string]any   `json:"default"`
						Items   []map[string]any `json:"items"`
					}](t, r)
					if got.Default["instances"] != 4.0 || len(got.Items) != 2 || got.Items[0]["name"] != "data" || got.Items[1]["name"] != "alice" {
						t.Errorf("list answered %+v", got)
					}
				}},
			{name: "delete", method: "DELETE", path: "/api/quotas/users/alice", token: admin, status: http.StatusNoContent},
			{name: "deleted", method: "GET", path: "/api/quotas/users/alice", token: admin, status: http.StatusNotFound},
			{name: "delete again", method: "DELETE", path: "/api/quotas/users/alice", token: admin, status: http.StatusNotFound},
		})
	})
}

func wantField(field string) func(t *testing.T, a *api, r *resp) {
	return func(t *testing.T, _ *api, r *resp) {
		if len(r.problem.Errors) != 1 || r.problem.Errors[0].Field != field {
			t.Errorf("errors %+v, want one for %s", r.problem.Errors, field)
		}
	}
}

// TestQuotaRefusals: each quota refuses exactly at its limit with a
// problem naming it; stopped instances do not count toward running; a
// team's members share its quota; an override applies at once.
func TestQuotaRefusals(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newQuotaAPI(t, b)
		var first []container.Instance
		keep := func(t *testing.T, _ *api, r *resp) { first = append(first, decode[container.Instance](t, r)) }
		runQuotaSteps(t, a, []quotaStep{
			{name: "alice 1", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusAccepted, check: keep},
			{name: "alice 2", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusAccepted, check: keep},
			{name: "alice 3: pending", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusTooManyRequests,
				quota: "pending", scope: "user", subject: "alice", limit: "2", used: "2",
				check: func(t *testing.T, a *api, _ *resp) {
					for _, in := range first {
						a.drive(in.ID, fsm.Running)
					}
				}},
			{name: "alice 3", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusAccepted},
			{name: "alice 4: running", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusTooManyRequests,
				quota: "running", scope: "user", subject: "alice", limit: "3", used: "3",
				check: func(t *testing.T, a *api, _ *resp) {
					a.mustStatus(a.do("POST", "/api/containers/"+first[0].ID+"/stop", alice, "", nil), http.StatusAccepted)
					a.drive(first[0].ID, fsm.Stopped)
				}},
			{name: "alice 4, one stopped", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusAccepted},
			{name: "alice's start: running", method: "POST", at: func() string { return "/api/containers/" + first[0].ID + "/start" }, token: alice,
				status: http.StatusTooManyRequests, quota: "running", scope: "user", subject: "alice", limit: "3", used: "3"},
			{name: "alice 5: instances", method: "POST", path: "/api/containers", token: alice, body: create1, status: http.StatusTooManyRequests,
				quota: "instances", scope: "user", subject: "alice", limit: "4", used: "4"},
			{name: "team data: 5 instances", method: "PUT", path: "/api/quotas/teams/data", token: admin, body: `{"instances":5}`, status: http.StatusOK},
			{name: "carol 1 of the team's 5", method: "POST", path: "/api/containers", token: carol, body: create1, status: http.StatusAccepted},
			{name: "carol 2: the team's", method: "POST", path: "/api/containers", token: carol, body: create1, status: http.StatusTooManyRequests,
				quota: "instances", scope: "team", subject: "data", limit: "5", used: "5"},
			{name: "bob: 1 cpu", method: "PUT", path: "/api/quotas/users/bob", token: admin, body: `{"cpus":1}`, status: http.StatusOK},
			{name: "bob 1", method: "POST", path: "/api/containers", token: bob, body: create1, status: http.StatusAccepted},
			{name: "bob 2", method: "POST", path: "/api/containers", token: bob, body: create1, status: http.StatusAccepted},
			{name: "bob 3: cpus", method: "POST", path: "/api/containers", token: bob, body: create1, status: http.StatusTooManyRequests,
				quota: "cpus", scope: "user", subject: "bob", limit: "1", used: "1"},
			{name: "bob: 192Mi", method: "PUT", path: "/api/quotas/users/bob", token: admin, body: `{"memory":"192Mi"}`, status: http.StatusOK},
			{name: "bob 3 at once", method: "POST", path: "/api/containers", token: bob, body: create1, status: http.StatusAccepted},
			{name: "bob 4: memory", method: "POST", path: "/api/containers", token: bob, body: create1, status: http.StatusTooManyRequests,
				quota: "memory", scope: "user", subject: "bob", limit: "201326592", used: "201326592"},
			{name: "alice's standing", method: "GET", path: "/api/quotas/me", token: alice, status: http.StatusOK, check: checkAliceStanding},
			{name: "bob has no team", method: "GET", path: "/api/quotas/me", token: bob, status: http.StatusOK,
				check: func(t *testing.T, _ *api, r *resp) {
					if got := decode[map[string]any](t, r); got["team"] != nil {
						t.Errorf("bob's standing has a team: %v", got)
					}
				}},
		})
	})
}

// standing is one subject's part of GET /api/quotas/me.
type standing struct {
	Name     string         `json:"name"`
	Override bool           `json:"override"`
	Limits   map[string]any `json:"limits"`
	Used     map[string]any `json:"used"`
}

func checkAliceStanding(t *testing.T, _ *api, r *resp) {
	got := decode[struct{ User, Team *standing }](t, r)
	if u := got.User; u == nil || u.Name != "alice" || u.Override || u.Limits["instances"] != 4.0 ||
		u.Used["instances"] != 4.0 || u.Used["running"] != 3.0 || u.Used["cpus"] != 1.5 || u.Used["memory"] != "192Mi" {
		t.Errorf("alice's standing %+v", got.User)
	}
	if tm := got.Team; tm == nil || tm.Name != "data" || !tm.Override || tm.Limits["instances"] != 5.0 || tm.Used["instances"] != 5.0 {
		t.Errorf("team data's standing %+v", got.Team)
	}
}
