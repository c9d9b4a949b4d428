package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// TestServeSIGTERMDrain: SIGTERM with creates and stops in flight ends the
// process cleanly (exit 0, "stopped" logged); what it did not finish is
// still owed, and the next start completes it: every instance converges
// with exactly one container and none is lost.
func TestServeSIGTERMDrain(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{maxConcurrency: 2})
	e.start()
	e.putTemplates()
	stopping := e.waitFor(e.create("sleeper").ID, fsm.Running, time.Minute)
	var creates []string
	for range 4 {
		creates = append(creates, e.create("sleeper").ID)
	}
	e.must(e.call("POST", "/api/containers/"+stopping.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	e.stop() // SIGTERM at once: work is in the queues and in the workers' hands
	logs := e.logs.String()
	for _, want := range []string{"shutting down", `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("shutdown log lacks %q:\n%s", want, tail(logs, 4000))
		}
	}

	e.start()
	for _, id := range creates {
		e.waitFor(id, fsm.Running, 2*time.Minute)
	}
	e.waitFor(stopping.ID, fsm.Stopped, 2*time.Minute)
	perInstance := map[string]int{}
	for _, st := range e.containers() {
		perInstance[st.InstanceID]++
	}
	for _, id := range append(creates, stopping.ID) {
		if perInstance[id] != 1 {
			t.Errorf("instance %s has %d containers, want 1", id, perInstance[id])
		}
	}
	if len(perInstance) != len(creates)+1 {
		t.Errorf("%d containers for %d instances: an orphan", len(perInstance), len(creates)+1)
	}
	e.stop()
}

// TestServeNoTokensLocalAdmin: with no auth.tokens, start-up says every
// request is the local admin, and so it is: no token needed, admin routes
// open, and containers are owned by "local".
func TestServeNoTokensLocalAdmin(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{noTokens: true})
	e.start()
	const banner = `identity: no auth.tokens configured: every request is served as the single local admin user "local"`
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.out.String(), banner) {
		if time.Now().After(deadline) {
			t.Fatalf("start-up does not say it serves everyone as the local admin:\n%s", e.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.putTemplates() // admin-only: PUT /api/templates
	for _, tok := range []string{"", "any-token"} {
		in := e.instance(e.must(e.call("POST", "/api/containers", tok, map[string]string{"template": "ok"}), http.StatusAccepted))
		if in.Owner != "local" {
			t.Fatalf("token %q: owner %q, want local", tok, in.Owner)
		}
	}
	var health map[string]any
	if err := json.Unmarshal(e.must(e.call("GET", "/healthz", "", nil), 200).body, &health); err != nil || health["status"] != "ready" {
		t.Fatalf("healthz as the local admin: %v %v", health, err)
	}
	e.stop()
}

// TestServeHealthDegraded: a Docker host that does not answer degrades
// berth (the admins' report says which host) but leaves it ready, and
// nobody else learns the engine's error text.
func TestServeHealthDegraded(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{downHost: true})
	e.start() // waits for /readyz: 200 although "gone" is down
	var health struct {
		Status string
		Docker map[string]struct {
			OK    bool
			Error string
		}
	}
	if err := json.Unmarshal(e.must(e.call("GET", "/healthz", adminToken, nil), 200).body, &health); err != nil {
		t.Fatal(err)
	}
	if health.Status != "degraded" || health.Docker["gone"].OK || health.Docker["gone"].Error == "" || !health.Docker["local"].OK {
		t.Fatalf("report with one host down: %+v", health)
	}
	r := e.must(e.call("GET", "/readyz", "", nil), 200)
	if strings.Contains(string(r.body), health.Docker["gone"].Error) || strings.Contains(string(r.body), "gone") {
		t.Fatalf("/readyz tells anyone about the hosts: %s", r.body)
	}
	e.must(e.call("GET", "/healthz", aliceToken, nil), http.StatusForbidden)
	e.must(e.call("GET", "/healthz", "", nil), http.StatusUnauthorized)
	e.stop()
}
