package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// counterScript counts in a shell variable, in memory only, printing each
// value: a container that restarted would count from 1 again ($$ is a
// template's literal $).
const counterScript = `i=0; while :; do i=$$((i+1)); echo $$i; sleep 0.1; done`

// counted is the counter's printed values so far, in order.
func (e *serveEnv) counted(id string) []int {
	e.t.Helper()
	r := e.must(e.call("GET", "/api/containers/"+id+"/logs", aliceToken, nil), http.StatusOK)
	var out []int
	for _, l := range strings.Fields(string(r.body)) {
		n, err := strconv.Atoi(l)
		if err != nil {
			e.t.Fatalf("counter printed %q", l)
		}
		out = append(out, n)
	}
	return out
}

func lastOf(ns []int) int {
	if len(ns) == 0 {
		return 0
	}
	return ns[len(ns)-1]
}

// TestServePause, on the real engine through `berth serve`: a pause keeps a
// process's memory (a counter in a shell variable stands still while
// paused, the engine's freezer holds it, and after a resume it carries on
// from where it was, never from 1); the API's answers (202, 200 when
// already so, 409 from a status the FSM does not allow, 404 to another
// owner) and the CLI's pause and resume; a paused instance's lifetime keeps
// running (its expiry stops it: stopped, not failed), its restart policy
// does not take the pause for an exit over reconciler passes, and its
// group's stop policy stops it.
func TestServePause(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: time.Second, containerKeys: "dag_node_cleanup_on_dag_finished: stop\n"})
	e.start()
	for name, tpl := range map[string]container.Template{
		"counter": {Command: []string{"sh", "-c", counterScript},
			Restart: &container.Restart{Policy: container.RestartAlways, Backoff: "1s"}},
		"short": {Command: []string{"sh", "-c", "exec sleep 3600"}, Lifetime: &container.Lifetime{Default: "25s"}},
	} {
		tpl.Runtime, tpl.Image, tpl.PullPolicy = "docker", e.image, container.PullNever
		e.must(e.call("PUT", "/api/templates/"+name, adminToken, tpl), http.StatusCreated)
	}
	ctx := context.Background()
	// The short-lived one is paused first and its expiry awaited last: its
	// lifetime counts from the request, so it must outlast a slow machine's
	// create and pause (a create took 5.5 s in CI) with the rest of the
	// test running meanwhile, not in a wait of its own.
	s := e.create("short")
	e.waitFor(s.ID, fsm.Running, time.Minute)
	e.must(e.call("POST", "/api/containers/"+s.ID+"/pause", aliceToken, nil), http.StatusAccepted)
	e.waitFor(s.ID, fsm.Paused, time.Minute)
	c := e.create("counter")
	e.waitFor(c.ID, fsm.Running, time.Minute)
	e.until("the counter counts", 30*time.Second, func() bool { return lastOf(e.counted(c.ID)) >= 5 })

	p := "/api/containers/" + c.ID
	e.must(e.call("POST", p+"/resume", aliceToken, nil), http.StatusOK) // running already
	e.must(e.call("POST", p+"/pause", bobToken, nil), http.StatusNotFound)
	if in := e.instance(e.must(e.call("POST", p+"/pause", aliceToken, nil), http.StatusAccepted)); in.Status != fsm.Running {
		t.Fatalf("the pause's answer: %s, want running until the worker has paused it", in.Status)
	}
	e.waitFor(c.ID, fsm.Paused, time.Minute)
	if st, err := e.engine.Inspect(ctx, runtime.Ref{InstanceID: c.ID}); err != nil || st.Phase != runtime.PhasePaused {
		t.Fatalf("the engine's container: %+v, %v; want paused", st, err)
	}
	e.must(e.call("POST", p+"/pause", aliceToken, nil), http.StatusOK) // paused already
	before := lastOf(e.counted(c.ID))
	// Standing still can only be seen over time: two reconciler passes
	// (reconcileEvery 1 s), which must leave it paused and unrestarted too.
	passes := strings.Count(e.logs.String(), "reconcile pass done")
	e.until("two reconciler passes", 30*time.Second, func() bool {
		return strings.Count(e.logs.String(), "reconcile pass done") >= passes+2
	})
	if now := lastOf(e.counted(c.ID)); now != before {
		t.Fatalf("the counter moved while paused: %d → %d", before, now)
	}
	if in := e.instance(e.call("GET", p, aliceToken, nil)); in.Status != fsm.Paused || in.RestartAt != nil {
		t.Fatalf("after reconciler passes: %s, restart_at %v; want paused, no restart", in.Status, in.RestartAt)
	}

	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	runBerth(t, env, "", "containers", "resume", c.ID).check(t, 0, []string{c.ID}, nil)
	e.waitFor(c.ID, fsm.Running, time.Minute)
	e.until("the counter counts on", 30*time.Second, func() bool { return lastOf(e.counted(c.ID)) > before+3 })
	ns := e.counted(c.ID)
	for i, n := range ns {
		if n != i+1 {
			t.Fatalf("the counter printed %d as its value number %d: it restarted or lost its memory (around %v)", n, i+1,
				ns[max(0, i-3):min(len(ns), i+3)])
		}
	}
	evs := e.events(c.ID)
	for _, typ := range []string{container.EventPauseRequested, container.EventPaused, container.EventResumeRequested, container.EventResumed} {
		if countType(evs, typ) != 1 {
			t.Errorf("%d %s events, want 1: %+v", countType(evs, typ), typ, evs)
		}
	}
	if countType(evs, container.EventRestartScheduled) != 0 || countType(evs, container.EventTransitionReject) != 0 {
		t.Errorf("a restart or a rejected transition around the pause: %+v", evs)
	}
	runBerth(t, env, "", "containers", "pause", c.ID).check(t, 0, []string{c.ID}, nil)
	e.waitFor(c.ID, fsm.Paused, time.Minute)

	// Its group's stop policy stops a paused member; a stopped one cannot
	// be paused or resumed.
	m := e.member("counter", "g-pause")
	e.waitFor(m.ID, fsm.Running, time.Minute)
	e.must(e.call("POST", "/api/containers/"+m.ID+"/pause", aliceToken, nil), http.StatusAccepted)
	e.waitFor(m.ID, fsm.Paused, time.Minute)
	e.must(e.call("POST", "/api/groups/g-pause/finish", aliceToken, map[string]string{"outcome": "succeeded"}), http.StatusAccepted)
	e.waitFor(m.ID, fsm.Stopped, time.Minute)
	for _, op := range []string{"pause", "resume"} {
		r := e.must(e.call("POST", "/api/containers/"+m.ID+"/"+op, aliceToken, nil), http.StatusConflict)
		var prob struct {
			CurrentStatus fsm.Status `json:"current_status"`
		}
		if err := json.Unmarshal(r.body, &prob); err != nil || prob.CurrentStatus != fsm.Stopped {
			t.Errorf("%s of a stopped container: %s", op, r.body)
		}
	}

	// A paused instance's lifetime keeps running: its expiry stops it.
	e.waitFor(s.ID, fsm.Stopped, time.Minute)
	if ev := e.expiryEvent(s.ID, aliceToken); ev.From != fsm.Paused {
		t.Errorf("the expiry acted from %s, want paused: %+v", ev.From, ev)
	}

	// The first counter, still paused, is stopped by a user like a running one.
	e.must(e.call("POST", p+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(c.ID, fsm.Stopped, time.Minute)
	e.stop()
}
