package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// expiryBound is the bound: an expiry is acted on within 5 s of
// expires_at (p99); the test holds every expiry to it.
const expiryBound = 5 * time.Second

// putLifetimeTemplate stores a sleeper template with lifetime l.
func (e *serveEnv) putLifetimeTemplate(name string, l container.Lifetime) {
	e.t.Helper()
	e.must(e.call("PUT", "/api/templates/"+name, adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exec sleep 3600"}, Lifetime: &l}), http.StatusCreated)
}

// expiryEvent is the one event of id's history that acted on its lifetime
// (its message the reason "lifetime reached", by berth); it fails the test
// unless there is exactly one.
func (e *serveEnv) expiryEvent(id, token string) container.Event {
	e.t.Helper()
	return e.reasonEvent(id, token, container.ReasonLifetimeReached)
}

// reasonEvent is the one event of id's history with message reason, by
// berth; it fails the test unless there is exactly one.
func (e *serveEnv) reasonEvent(id, token, reason string) container.Event {
	e.t.Helper()
	var page struct{ Items []container.Event }
	if err := json.Unmarshal(e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", token, nil), http.StatusOK).body, &page); err != nil {
		e.t.Fatal(err)
	}
	var found []container.Event
	for _, ev := range page.Items {
		if ev.Message == reason {
			found = append(found, ev)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("%s: %d events %q, want 1: %+v", id, len(found), reason, page.Items)
	}
	if found[0].Actor != container.ActorSystem {
		e.t.Fatalf("%s: the %q event's actor is %q, want %q", id, reason, found[0].Actor, container.ActorSystem)
	}
	return found[0]
}

// runningAt is when id's history says it first ran.
func (e *serveEnv) runningAt(id string) time.Time {
	e.t.Helper()
	var page struct{ Items []container.Event }
	if err := json.Unmarshal(e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", aliceToken, nil), http.StatusOK).body, &page); err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range page.Items {
		if ev.To == fsm.Running {
			return ev.At
		}
	}
	e.t.Fatalf("%s never ran: %+v", id, page.Items)
	return time.Time{}
}

// TestServeLifetimeStops: instances of a template with a 5 s lifetime are
// stopped by berth through the normal path (stop_pending, the stop
// worker, stopped) within the bound of their expires_at, once each, by
// the timers (the reconciler runs far less often than the bound); the
// lags are logged.
func TestServeLifetimeStops(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute})
	e.start()
	e.putLifetimeTemplate("brief", container.Lifetime{Default: "5s", Max: "1m"})
	const n = 6
	insts := make([]container.Instance, n)
	for i := range insts {
		insts[i] = e.create("brief")
		if insts[i].ExpiresAt == nil || insts[i].Lifetime == nil || insts[i].Lifetime.OnExpiry != container.ExpiryStop {
			t.Fatalf("created without its lifetime: %+v", insts[i])
		}
		if got := insts[i].ExpiresAt.Sub(insts[i].CreatedAt); got != 5*time.Second {
			t.Fatalf("expires_at is %s after the create, want 5s", got)
		}
	}
	var lags []time.Duration
	for _, in := range insts {
		e.waitFor(in.ID, fsm.Stopped, time.Minute)
		ev := e.expiryEvent(in.ID, aliceToken)
		if ev.Type != container.EventStopRequested || ev.To != fsm.StopPending {
			t.Fatalf("the expiry's event %+v, want %s to %s", ev, container.EventStopRequested, fsm.StopPending)
		}
		// A stop can only follow the create: an instance still being
		// made at its expires_at is due once it runs.
		due := *in.ExpiresAt
		if ran := e.runningAt(in.ID); ran.After(due) {
			due = ran
		}
		lag := ev.At.Sub(due)
		if lag < 0 || lag > expiryBound {
			t.Errorf("%s stopped %s after it was due (expires_at %s), want within [0, %s]", in.ID, lag, in.ExpiresAt, expiryBound)
		}
		lags = append(lags, lag)
	}
	slices.Sort(lags)
	t.Logf("expiry lag on berth serve (%d instances): min %s, median %s, max %s", n, lags[0], lags[n/2], lags[n-1])
	if strings.Contains(e.logs.String(), "expired by the reconciler") {
		t.Error("the reconciler expired an instance: the timers should have")
	}
}

// TestServeLifetimeDeletes: under on_expiry: delete the instance is
// deleted at expiry (its history still readable, one expiry in it).
func TestServeLifetimeDeletes(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute})
	e.start()
	e.putLifetimeTemplate("brief-del", container.Lifetime{Default: "5s", OnExpiry: container.ExpiryDelete})
	in := e.create("brief-del")
	deadline := time.Now().Add(time.Minute)
	for e.call("GET", "/api/containers/"+in.ID, aliceToken, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("%s not deleted a minute after its expiry", in.ID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ev := e.expiryEvent(in.ID, aliceToken)
	if ev.Type != container.EventDeleteRequested {
		t.Fatalf("the expiry's event %+v, want %s", ev, container.EventDeleteRequested)
	}
	// A delete may be asked of an instance still being made, so its
	// expiry never waits.
	if lag := ev.At.Sub(*in.ExpiresAt); lag < 0 || lag > expiryBound {
		t.Errorf("deleted %s after its expires_at, want within [0, %s]", lag, expiryBound)
	}
	t.Logf("expiry lag (delete) on berth serve: %s", ev.At.Sub(*in.ExpiresAt))
}

// TestServeLifetimeExtend: an extension moves expires_at and the expiry
// with it; one past the max is 422 naming the limit and changes nothing;
// so is a create asking for more than the max; another owner gets 404; an
// instance that has ended, 409; a template's lifetime is validated.
func TestServeLifetimeExtend(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute})
	e.start()
	e.putLifetimeTemplate("brief", container.Lifetime{Default: "5s", Max: "30s"})

	r := e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "brief", "lifetime": "1h"})
	e.must(r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "max lifetime 30s") {
		t.Fatalf("a create past the max does not name it: %s", r.body)
	}
	in := e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "brief", "lifetime": "4s"}), http.StatusAccepted))
	if got := in.ExpiresAt.Sub(in.CreatedAt); got != 4*time.Second {
		t.Fatalf("asked for 4s, expires %s after the create", got)
	}
	e.must(e.call("POST", "/api/containers/"+in.ID+"/extend", bobToken, map[string]string{"by": "10s"}), http.StatusNotFound)
	ext := e.instance(e.must(e.call("POST", "/api/containers/"+in.ID+"/extend", aliceToken, map[string]string{"by": "6s"}), http.StatusOK))
	if got := ext.ExpiresAt.Sub(*in.ExpiresAt); got != 6*time.Second {
		t.Fatalf("extended by 6s, expires_at moved by %s", got)
	}
	r = e.call("POST", "/api/containers/"+in.ID+"/extend", aliceToken, map[string]string{"by": "1m"})
	e.must(r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "max lifetime 30s") {
		t.Fatalf("an extension past the max does not name it: %s", r.body)
	}
	e.must(e.call("POST", "/api/containers/"+in.ID+"/extend", aliceToken, map[string]string{"by": "soon"}), http.StatusUnprocessableEntity)
	if cur := e.instance(e.call("GET", "/api/containers/"+in.ID, aliceToken, nil)); !cur.ExpiresAt.Equal(*ext.ExpiresAt) {
		t.Fatalf("a refused extension moved expires_at to %v", cur.ExpiresAt)
	}

	e.waitFor(in.ID, fsm.Stopped, time.Minute)
	ev := e.expiryEvent(in.ID, aliceToken)
	if lag := ev.At.Sub(*ext.ExpiresAt); lag < 0 || lag > expiryBound {
		t.Fatalf("stopped %s after the extended expires_at (%s after the first), want within [0, %s]",
			lag, ev.At.Sub(*in.ExpiresAt), expiryBound)
	}
	r = e.call("POST", "/api/containers/"+in.ID+"/extend", aliceToken, map[string]string{"by": "1s"})
	e.must(r, http.StatusConflict)

	for _, l := range []container.Lifetime{{Default: "2h", Max: "1h"}, {Default: "soon"}, {Max: "1h", OnExpiry: "pause"}, {}} {
		e.must(e.call("PUT", "/api/templates/bad-life", adminToken, container.Template{Runtime: "docker", Image: e.image,
			PullPolicy: container.PullNever, Lifetime: &l}), http.StatusUnprocessableEntity)
	}
}

// TestServeLifetimeAcrossRestart: timers survive a kill -9 of berth serve:
// instances whose expiry falls while berth is down are expired once it is
// back (loaded from the store at start), once each.
func TestServeLifetimeAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute})
	e.start()
	e.putLifetimeTemplate("brief", container.Lifetime{Default: "15s", Max: "1m"})
	var insts []container.Instance
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := e.create("brief")
			mu.Lock()
			insts = append(insts, in)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, in := range insts {
		e.waitFor(in.ID, fsm.Running, time.Minute)
	}
	e.kill()
	for _, in := range insts {
		time.Sleep(time.Until(in.ExpiresAt.Add(time.Second))) // down across every expiry
	}
	e.start()
	for _, in := range insts {
		e.waitFor(in.ID, fsm.Stopped, time.Minute)
		e.expiryEvent(in.ID, aliceToken)
	}
}
