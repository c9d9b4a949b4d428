package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestServeRestart: on the real engine, a group member whose container
// exits 3 under `on-failure`, `max_restarts: 2`, `backoff: 1s` is started
// again twice through the FSM's own path (running → start_pending →
// starting → running), the second restart after a doubled backoff, each
// recorded with its exit code and last words; then it fails, and only then
// does its group's failure policy (dag_node_cleanup_on_failed: delete) run,
// once. A user's stop during a restart's backoff wins: no restart follows.
// A template's restart policy is validated.
func TestServeRestart(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute, containerKeys: "dag_node_cleanup_on_failed: delete\n"})
	e.start()
	two := 2
	e.must(e.call("PUT", "/api/templates/flaky", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "echo attempt failing; exit 3"},
		Restart: &container.Restart{Policy: container.RestartOnFailure, MaxRestarts: &two, Backoff: "1s"}}), http.StatusCreated)
	e.must(e.call("PUT", "/api/templates/slow-flaky", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exit 4"},
		Restart: &container.Restart{Policy: container.RestartAlways, Backoff: "20s", MaxBackoff: "1m"}}), http.StatusCreated)
	for _, r := range []container.Restart{{Policy: "sometimes"}, {Policy: container.RestartAlways, Backoff: "soon"},
		{Policy: container.RestartAlways, Backoff: "2m", MaxBackoff: "1m"}, {Policy: container.RestartAlways, MaxBackoff: "2h"}} {
		e.must(e.call("PUT", "/api/templates/bad-restart", adminToken, container.Template{Runtime: "docker", Image: e.image,
			PullPolicy: container.PullNever, Restart: &r}), http.StatusUnprocessableEntity)
	}

	flaky := e.member("flaky", "run-r")
	stopped := e.create("slow-flaky")
	e.waitGone(flaky.ID, 2*time.Minute)
	evs := e.events(flaky.ID)
	var scheduled, requested []container.Event
	failedAt, deleteAt := -1, -1
	for i, ev := range evs {
		switch {
		case ev.Type == container.EventRestartScheduled:
			scheduled = append(scheduled, ev)
		case ev.Type == container.EventStartRequested && ev.Actor == container.ActorSystem:
			requested = append(requested, ev)
		case ev.To == fsm.Failed && failedAt < 0:
			failedAt = i
		case ev.Type == container.EventDeleteRequested:
			if deleteAt >= 0 {
				t.Fatalf("the group's policy deleted the member twice: %+v", evs)
			}
			deleteAt = i
		}
	}
	if len(scheduled) != 2 || len(requested) != 2 {
		t.Fatalf("%d restarts scheduled, %d started; want 2 each: %+v", len(scheduled), len(requested), evs)
	}
	for i, ev := range scheduled {
		if ev.ExitCode == nil || *ev.ExitCode != 3 || !saidIt(ev.LastWords, "attempt failing") {
			t.Fatalf("restart %d's event lacks the exit code or the last words: %+v", i+1, ev)
		}
		backoff := requested[i].At.Sub(ev.At)
		if want := time.Second << i; backoff < want || backoff > want+expiryBound {
			t.Errorf("restart %d started %s after the exit, want its backoff %s (within %s)", i+1, backoff, want, expiryBound)
		}
	}
	if failedAt < 0 || deleteAt < failedAt {
		t.Fatalf("failed at event %d, the group's delete at %d: want the delete after the failure: %+v", failedAt, deleteAt, evs)
	}
	if last := evs[failedAt]; !strings.Contains(last.Message, "after 2 restarts") {
		t.Fatalf("the failure does not say it came after the restarts: %+v", last)
	}

	// slow-flaky waits 20 s for its first restart; alice stops it first.
	in := e.waitFor(stopped.ID, fsm.Running, time.Minute)
	e.until("its restart scheduled", time.Minute, func() bool {
		in = e.instance(e.call("GET", "/api/containers/"+stopped.ID, aliceToken, nil))
		return in.RestartAt != nil
	})
	if in.Status != fsm.Running || in.Restarts != 1 || in.LastExit == nil || *in.LastExit != 4 {
		t.Fatalf("in its backoff: %s, restarts %d, last_exit %v", in.Status, in.Restarts, in.LastExit)
	}
	e.must(e.call("POST", "/api/containers/"+stopped.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	if out := e.waitFor(stopped.ID, fsm.Stopped, time.Minute); out.RestartAt != nil {
		t.Fatalf("stopped with restart_at %v", out.RestartAt)
	}
	if n := countType(e.events(stopped.ID), container.EventStartRequested); n != 0 {
		t.Fatalf("a restart was asked after the user's stop (%d start requests)", n)
	}
}

// saidIt reports whether the last words hold a line containing text.
func saidIt(w *container.LastWords, text string) bool {
	if w == nil {
		return false
	}
	for _, l := range w.Lines {
		if strings.Contains(l.Text, text) {
			return true
		}
	}
	return false
}
