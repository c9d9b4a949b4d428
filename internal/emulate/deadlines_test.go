package emulate_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/testenv"
)

// putTemplateDoc stores a sleeper template with extra fields (a lifetime,
// a retention) through the front door.
func (st *stack) putTemplateDoc(name string, cmd []string, extra map[string]any) {
	st.t.Helper()
	doc := map[string]any{"runtime": "docker", "image": os.Getenv(testenv.EnvTestImage), "pull_policy": "IfNotPresent", "command": cmd}
	for k, v := range extra {
		doc[k] = v
	}
	if r := st.do(http.MethodPut, "/api/templates/"+name, adminToken, doc); r.status != http.StatusCreated && r.status != http.StatusOK {
		st.t.Fatalf("PUT template %s: %d %s", name, r.status, r.body)
	}
}

// reasonEvent is the one event of id's history with message reason (by
// berth), as the API lists it; it fails the test unless there is exactly
// one.
func (st *stack) reasonEvent(id, reason string) map[string]any {
	st.t.Helper()
	r := st.do(http.MethodGet, "/api/containers/"+id+"/events?limit=100", aliceToken, nil)
	if r.status != http.StatusOK {
		st.t.Fatalf("events of %s: %d %s", id, r.status, r.body)
	}
	var found []map[string]any
	items, _ := r.json(st.t)["items"].([]any)
	for _, it := range items {
		if ev, _ := it.(map[string]any); ev["message"] == reason {
			found = append(found, ev)
		}
	}
	if len(found) != 1 || found[0]["actor"] != container.ActorSystem {
		st.t.Fatalf("%s: events %q by berth: %v, want one", id, reason, found)
	}
	return found[0]
}

// lagAfter is how long after the instance field due (an RFC 3339 time)
// the event ev happened.
func lagAfter(t testing.TB, ev map[string]any, due string) time.Duration {
	t.Helper()
	at, err1 := time.Parse(time.RFC3339Nano, ev["at"].(string))
	d, err2 := time.Parse(time.RFC3339Nano, due)
	if err1 != nil || err2 != nil {
		t.Fatalf("times %v %q: %v %v", ev["at"], due, err1, err2)
	}
	return at.Sub(d)
}

// watcherDeadlines: on the emulated AWS stack, with the reconciler's
// schedule off, the watcher's timers carry out a 5 s lifetime (a stop; a
// delete under on_expiry: delete) and a retention (the delete of a
// stopped instance) within the bound of their time; an extension moves
// an expiry, and one past the max is 422 naming it.
func watcherDeadlines(t *testing.T, st *stack) {
	sleep := []string{"sh", "-c", "exec sleep 3600"}
	st.putTemplateDoc("brief", sleep, map[string]any{"lifetime": map[string]any{"default": "5s", "max": "30s"}})
	st.putTemplateDoc("brief-del", sleep, map[string]any{"lifetime": map[string]any{"default": "5s", "on_expiry": "delete"}})
	st.putTemplateDoc("kept", sleep, map[string]any{"retention": map[string]any{"stopped": "3s"}})

	stops, deletes, extended, kept := st.create(aliceToken, "brief", ""), st.create(aliceToken, "brief-del", ""),
		st.create(aliceToken, "brief", ""), st.create(aliceToken, "kept", "")
	deletesAt := st.get(aliceToken, deletes)["expires_at"].(string) // read before it falls (5 s)
	r := st.do(http.MethodPost, "/api/containers/"+extended+"/extend", aliceToken, map[string]string{"by": "1m"})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "max lifetime 30s") {
		t.Fatalf("an extension past the max: %d %s, want 422 naming it", r.status, r.body)
	}
	before := st.get(aliceToken, extended)["expires_at"].(string)
	r = st.do(http.MethodPost, "/api/containers/"+extended+"/extend", aliceToken, map[string]string{"by": "6s"})
	if r.status != http.StatusOK {
		t.Fatalf("an extension: %d %s", r.status, r.body)
	}
	after := r.json(t)["expires_at"].(string)
	if lag := lagAfter(t, map[string]any{"at": after}, before); lag != 6*time.Second {
		t.Fatalf("extended by 6s, expires_at moved by %s", lag)
	}
	st.wait(aliceToken, kept, "running", time.Minute)
	if r := st.do(http.MethodPost, "/api/containers/"+kept+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	// Read while it is kept (3 s): it is deleted by the time the lifetimes
	// below are checked.
	stopped := st.wait(aliceToken, kept, "stopped", time.Minute)
	deleteAt, _ := stopped["delete_at"].(string)
	if deleteAt == "" {
		t.Fatalf("stopped without a delete_at: %v", stopped)
	}

	for _, c := range []struct {
		id, due, reason string
		lifetime        bool
	}{{stops, "", container.ReasonLifetimeReached, true}, {extended, after, container.ReasonLifetimeReached, true}} {
		in := st.wait(aliceToken, c.id, "stopped", time.Minute)
		due := c.due
		if due == "" {
			due = in["expires_at"].(string)
		}
		ev := st.reasonEvent(c.id, c.reason)
		// A stop can only follow the create: one still being made at its
		// expires_at is due once it runs.
		lag := lagAfter(t, ev, due)
		if started, _ := in["started_at"].(string); started != "" {
			if l := lagAfter(t, ev, started); l < lag {
				lag = l
			}
		}
		if lag < 0 || lag > expiryBound {
			t.Errorf("%s stopped %s after it was due (%s), want within [0, %s]", c.id, lag, due, expiryBound)
		}
		t.Logf("expiry lag on the emulated stack: %s", lag)
	}
	for id, due := range map[string]string{deletes: deletesAt, kept: deleteAt} {
		st.waitGone(id, time.Minute)
		reason, what := container.ReasonLifetimeReached, "expires_at (on_expiry: delete)"
		if id == kept {
			reason, what = container.ReasonRetentionReached, "delete_at"
		}
		// A delete may be asked of an instance still being made: it
		// never waits.
		lag := lagAfter(t, st.reasonEvent(id, reason), due)
		if lag < 0 || lag > expiryBound {
			t.Errorf("%s deleted %s after its %s, want within [0, %s]", id, lag, what, expiryBound)
		}
		t.Logf("lag after %s on the emulated stack: %s", what, lag)
	}
}

// expiryBound is the bound on a lifetime's (and a retention's)
// action after its time.
const expiryBound = 5 * time.Second

// waitGone waits until id answers 404 (its history stays readable).
func (st *stack) waitGone(id string, within time.Duration) {
	st.t.Helper()
	deadline := time.Now().Add(within)
	for st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			st.t.Fatalf("%s not deleted within %s", id, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
