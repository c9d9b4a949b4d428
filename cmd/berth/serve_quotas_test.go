package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// quotaRefusal is the part of a quota-exceeded problem the tests read.
type quotaRefusal struct {
	Type    string      `json:"type"`
	Quota   string      `json:"quota"`
	Scope   string      `json:"scope"`
	Subject string      `json:"subject"`
	Limit   json.Number `json:"limit"`
	Used    json.Number `json:"used"`
}

// refused checks that r is a 429 over quota of scope subject at limit with used.
func (e *serveEnv) refused(what string, r apiResp, quota, scope, subject, limit, used string) {
	e.t.Helper()
	var p quotaRefusal
	_ = json.Unmarshal(r.body, &p)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || !strings.HasSuffix(p.Type, "quota-exceeded") ||
		p.Quota != quota || p.Scope != scope || p.Subject != subject || p.Limit.String() != limit || p.Used.String() != used {
		e.t.Fatalf("%s: %d (Retry-After %q) %s; want 429 over %s of %s %s, limit %s, used %s",
			what, r.status, r.header.Get("Retry-After"), r.body, quota, scope, subject, limit, used)
	}
}

// TestServeQuotas: through `berth serve` with quotas.default {instances
// 3, running 2} and alice and carol in team data, each quota refuses
// exactly at its limit with the problem naming it, a stopped instance
// does not count toward running, the team's members share its override,
// and overrides take effect (and are removed) without a restart.
func TestServeQuotas(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{teams: true, extra: "quotas:\n  default: {instances: 3, running: 2}\n"})
	e.start()
	e.putTemplates()
	create := func(token string) apiResp {
		return e.call("POST", "/api/containers", token, map[string]string{"template": "sleeper"})
	}
	a1 := e.instance(e.must(create(aliceToken), http.StatusAccepted))
	e.must(create(aliceToken), http.StatusAccepted)
	e.refused("alice's third, two on their way to run", create(aliceToken), "running", "user", "alice", "2", "2")

	e.waitFor(a1.ID, fsm.Running, time.Minute)
	e.must(e.call("POST", "/api/containers/"+a1.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(a1.ID, fsm.Stopped, time.Minute)
	e.must(create(aliceToken), http.StatusAccepted) // the stopped one does not run
	e.refused("alice's fourth", create(aliceToken), "instances", "user", "alice", "3", "3")
	e.refused("alice's start", e.call("POST", "/api/containers/"+a1.ID+"/start", aliceToken, nil), "running", "user", "alice", "2", "2")

	// The team's override: alice's 3 and carol's 1 fill it together.
	e.must(e.call("PUT", "/api/quotas/teams/data", adminToken, map[string]int{"instances": 4}), http.StatusOK)
	e.must(create(carolToken), http.StatusAccepted)
	e.refused("carol's second", create(carolToken), "instances", "team", "data", "4", "4")

	// bob's override applies to his next create, and its removal too.
	e.must(create(bobToken), http.StatusAccepted)
	e.must(create(bobToken), http.StatusAccepted)
	e.refused("bob's third", create(bobToken), "running", "user", "bob", "2", "2")
	e.must(e.call("PUT", "/api/quotas/users/bob", adminToken, map[string]int{"instances": 10, "running": 3}), http.StatusOK)
	e.must(create(bobToken), http.StatusAccepted)
	e.must(e.call("DELETE", "/api/quotas/users/bob", adminToken, nil), http.StatusNoContent)
	e.refused("bob's fourth, the override gone", create(bobToken), "instances", "user", "bob", "3", "3")

	var me struct {
		User struct {
			Used map[string]any `json:"used"`
		} `json:"user"`
		Team *struct {
			Name     string         `json:"name"`
			Override bool           `json:"override"`
			Used     map[string]any `json:"used"`
		} `json:"team"`
	}
	if err := json.Unmarshal(e.must(e.call("GET", "/api/quotas/me", aliceToken, nil), http.StatusOK).body, &me); err != nil {
		t.Fatal(err)
	}
	if me.User.Used["instances"] != 3.0 || me.User.Used["running"] != 2.0 || me.Team == nil || me.Team.Name != "data" ||
		!me.Team.Override || me.Team.Used["instances"] != 4.0 {
		t.Errorf("alice's standing: %+v %+v", me.User, me.Team)
	}
	// Deleting frees the instance quota at once.
	var list struct{ Items []container.Instance }
	_ = json.Unmarshal(e.must(e.call("GET", "/api/containers", carolToken, nil), http.StatusOK).body, &list)
	if len(list.Items) != 1 {
		t.Fatalf("carol lists %d containers", len(list.Items))
	}
	e.must(e.call("DELETE", "/api/containers/"+list.Items[0].ID, carolToken, nil), http.StatusAccepted)
	// Polled: GET answers 404 once the delete's transaction, which
	// released the reservation, has committed.
	deadline := time.Now().Add(time.Minute)
	for e.call("GET", "/api/containers/"+list.Items[0].ID, carolToken, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("carol's container was never deleted\n%s", tail(e.logs.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.must(create(carolToken), http.StatusAccepted)
	e.refused("carol's next", create(carolToken), "instances", "team", "data", "4", "4")
	serveOnBehalfOf(e)
}

// serveOnBehalfOf: a service acting on behalf of users is charged to them
// (their quota and their team's refuse it, a new user's fills up as the
// user's own creates would) and a caller without the claim is refused.
func serveOnBehalfOf(e *serveEnv) {
	e.t.Helper()
	forUser := func(token, user, team string) apiResp {
		return e.call("POST", "/api/containers", token, map[string]string{"template": "sleeper", "on_behalf_of": user, "on_behalf_of_team": team})
	}
	e.must(forUser(bobToken, "alice", ""), http.StatusForbidden)
	e.must(forUser(adminToken, "alice", ""), http.StatusForbidden)
	e.refused("bob's, by the engine", forUser(engineToken, "bob", ""), "instances", "user", "bob", "3", "3")
	e.refused("carol's team's, by the engine", forUser(engineToken, "carol", "data"), "instances", "team", "data", "4", "4")
	d1 := e.instance(e.must(forUser(engineToken, "dave", ""), http.StatusAccepted))
	e.must(forUser(engineToken, "dave", ""), http.StatusAccepted)
	e.refused("dave's third, by the engine", forUser(engineToken, "dave", ""), "running", "user", "dave", "2", "2")
	if d1.Owner != "dave" {
		e.t.Errorf("made on behalf of dave, owned by %q", d1.Owner)
	}
	var evs struct{ Items []container.Event }
	_ = json.Unmarshal(e.must(e.call("GET", "/api/containers/"+d1.ID+"/events", adminToken, nil), http.StatusOK).body, &evs)
	if len(evs.Items) == 0 || evs.Items[0].Actor != "engine" || evs.Items[0].OnBehalfOf != "dave" {
		e.t.Errorf("dave's first event: %+v, want the engine acting on behalf of dave", evs.Items)
	}
	// The engine deletes what it made, as dave only.
	e.must(e.call("DELETE", "/api/containers/"+d1.ID, engineToken, nil), http.StatusNotFound)
	e.must(e.call("DELETE", "/api/containers/"+d1.ID+"?on_behalf_of=dave", engineToken, nil), http.StatusAccepted)
}
