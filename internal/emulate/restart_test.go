package emulate_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// watcherRestarts: on the emulated AWS stack (the watcher notices the
// exits and holds the restarts' timers; the reconciler is off), a group
// member exiting 3 under on-failure, max_restarts 2, backoff 1s is started
// again twice, the second after a doubled backoff, then fails, and its
// group's failure policy (dag_node_cleanup_on_failed: delete) runs once,
// after the last attempt.
func watcherRestarts(t *testing.T, st *stack) {
	st.putTemplateDoc("flaky", []string{"sh", "-c", "echo attempt failing; exit 3"},
		map[string]any{"restart": map[string]any{"policy": "on-failure", "max_restarts": 2, "backoff": "1s"}})
	id := st.createMember(aliceToken, "flaky", "node-a", "run-r")
	st.waitGone(id, 2*time.Minute)
	r := st.do(http.MethodGet, "/api/containers/"+id+"/events?limit=100", aliceToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	items, _ := r.json(t)["items"].([]any)
	var scheduled, started []map[string]any
	failedAt, deleteAt, deletes := -1, -1, 0
	for i, it := range items {
		ev, _ := it.(map[string]any)
		switch {
		case ev["type"] == container.EventRestartScheduled:
			scheduled = append(scheduled, ev)
		case ev["type"] == container.EventStartRequested && ev["actor"] == container.ActorSystem:
			started = append(started, ev)
		case ev["to"] == "failed" && failedAt < 0:
			failedAt = i
		case ev["type"] == container.EventDeleteRequested:
			deleteAt, deletes = i, deletes+1
		}
	}
	if len(scheduled) != 2 || len(started) != 2 || deletes != 1 || failedAt < 0 || deleteAt < failedAt {
		t.Fatalf("restarts scheduled %d, started %d, deletes %d (at %d), failed at %d; want 2, 2, 1 after the failure: %v",
			len(scheduled), len(started), deletes, deleteAt, failedAt, items)
	}
	for i, ev := range scheduled {
		if code, _ := ev["exit_code"].(float64); code != 3 || ev["last_words"] == nil {
			t.Fatalf("restart %d's event lacks the exit code or the last words: %v", i+1, ev)
		}
		backoff := lagAfter(t, started[i], ev["at"].(string))
		if want := time.Second << i; backoff < want || backoff > want+expiryBound {
			t.Errorf("restart %d started %s after the exit, want its backoff %s (within %s)", i+1, backoff, want, expiryBound)
		}
		t.Logf("restart %d started %s after the exit (backoff %s)", i+1, backoff, time.Second<<i)
	}
}
