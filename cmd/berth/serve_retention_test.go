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

// TestServeRetention: on the real engine, ended instances are deleted
// once they have stayed ended their retention: a stopped one (the
// deployment's container.stopped_retention, for a template that sets
// none) and a failed one (container.failed_retention), each through a
// delete request by berth with the reason "retention reached", once, and
// within the lifetimes' bound of delete_at (the timers, not the
// reconciler). A template's own retention replaces the deployment's (one
// that keeps failed instances keeps them), and an instance started again
// before its delete_at is not deleted: the start cleared it.
func TestServeRetention(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{reconcileEvery: 10 * time.Minute,
		containerKeys: "stopped_retention: 5s\nfailed_retention: 6s\n"})
	e.start()
	e.putTemplates()
	e.must(e.call("PUT", "/api/templates/keeps-failed", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exit 3"}, Retention: &container.Retention{Stopped: "2s"}}),
		http.StatusCreated)
	for _, r := range []container.Retention{{}, {Stopped: "soon"}, {Failed: "-1h"}} {
		e.must(e.call("PUT", "/api/templates/bad-retention", adminToken, container.Template{Runtime: "docker", Image: e.image,
			PullPolicy: container.PullNever, Retention: &r}), http.StatusUnprocessableEntity)
	}

	stopped, failed, kept, restarted := e.create("ok"), e.create("bad"), e.create("keeps-failed"), e.create("sleeper")
	// Each read as it ends (the API's wait answers at once), while it is
	// still kept: it is deleted 5 or 6 s later.
	endedAs := map[string]chan container.Instance{stopped.ID: make(chan container.Instance, 1), failed.ID: make(chan container.Instance, 1)}
	for _, w := range []struct {
		id string
		to fsm.Status
	}{{stopped.ID, fsm.Stopped}, {failed.ID, fsm.Failed}} {
		go func() { endedAs[w.id] <- e.endedAs(w.id, w.to) }()
	}
	if stopped.Retention == nil || stopped.Retention.Stopped != "5s" || stopped.Retention.Failed != "6s" || stopped.DeleteAt != nil {
		t.Fatalf("created under the deployment's retention: %+v, delete_at %v", stopped.Retention, stopped.DeleteAt)
	}
	if kept.Retention == nil || *kept.Retention != (container.Retention{Stopped: "2s"}) {
		t.Fatalf("created under its template's retention: %+v", kept.Retention)
	}
	e.waitFor(restarted.ID, fsm.Running, time.Minute)
	e.must(e.call("POST", "/api/containers/"+restarted.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	if in := e.waitFor(restarted.ID, fsm.Stopped, time.Minute); in.DeleteAt == nil {
		t.Fatalf("stopped without a delete_at: %+v", in)
	}
	e.must(e.call("POST", "/api/containers/"+restarted.ID+"/start", aliceToken, nil), http.StatusAccepted)
	if in := e.waitFor(restarted.ID, fsm.Running, time.Minute); in.DeleteAt != nil {
		t.Fatalf("started again with delete_at %v", in.DeleteAt)
	}

	for _, c := range []struct {
		in     container.Instance
		status fsm.Status
		after  time.Duration
	}{{stopped, fsm.Stopped, 5 * time.Second}, {failed, fsm.Failed, 6 * time.Second}} {
		ended := <-endedAs[c.in.ID]
		if ended.ID == "" {
			t.Fatalf("%s: not %s within a minute", c.in.ID, c.status)
		}
		if ended.DeleteAt == nil || ended.DeleteAt.Sub(ended.UpdatedAt) != c.after {
			t.Fatalf("%s %s at %s with delete_at %v, want %s later", c.in.ID, c.status, ended.UpdatedAt, ended.DeleteAt, c.after)
		}
		e.waitGone(c.in.ID, time.Minute)
		ev := e.reasonEvent(c.in.ID, aliceToken, container.ReasonRetentionReached)
		if ev.Type != container.EventDeleteRequested || ev.From != c.status {
			t.Fatalf("the retention's event %+v, want %s from %s", ev, container.EventDeleteRequested, c.status)
		}
		if lag := ev.At.Sub(*ended.DeleteAt); lag < 0 || lag > expiryBound {
			t.Errorf("%s deleted %s after its delete_at, want within [0, %s]", c.in.ID, lag, expiryBound)
		}
		t.Logf("retention lag (%s) on berth serve: %s", c.status, ev.At.Sub(*ended.DeleteAt))
	}
	// Kept past the deployment's 6 s (and a second for its timer): what
	// is checked is that nothing happens, so the test waits that long.
	in := e.waitFor(kept.ID, fsm.Failed, time.Minute)
	if in.DeleteAt != nil {
		t.Fatalf("a failed instance its template keeps has delete_at %v", in.DeleteAt)
	}
	time.Sleep(time.Until(in.UpdatedAt.Add(7 * time.Second)))
	if in = e.instance(e.must(e.call("GET", "/api/containers/"+kept.ID, aliceToken, nil), http.StatusOK)); in.Status != fsm.Failed {
		t.Fatalf("a failed instance its template keeps is %s", in.Status)
	}
	if in := e.instance(e.call("GET", "/api/containers/"+restarted.ID, aliceToken, nil)); in.Status != fsm.Running {
		t.Fatalf("the instance started again is %s, want running", in.Status)
	}
	if strings.Contains(e.logs.String(), "deleted by the reconciler") {
		t.Error("the reconciler deleted a retained instance: the timers should have")
	}
}

// waitGone waits until id answers 404.
func (e *serveEnv) waitGone(id string, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for e.call("GET", "/api/containers/"+id, aliceToken, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s not deleted within %s\nserver log:\n%s", id, within, tail(e.logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// endedAs waits up to a minute, through the API's own wait, until id is
// want and returns it then (zero when it never is); it may run on its own
// goroutine: it fails nothing.
func (e *serveEnv) endedAs(id string, want fsm.Status) container.Instance {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, err := e.do("GET", "/api/containers/"+id+"/wait?status="+string(want)+"&timeout=20s", aliceToken, nil)
		if err == nil && r.status == http.StatusOK {
			var in container.Instance
			if json.Unmarshal(r.body, &in) == nil {
				return in
			}
		}
	}
	return container.Instance{}
}
