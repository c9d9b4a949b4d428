package emulate_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/runtime"
)

// noReconciler turns the reconciler's schedule off: what records an exit
// in these tests is the watcher alone.
var noReconciler = map[string]time.Duration{"ReconcilerFunction": -1}

// noticeBound is the p99 goal: an exit reported by the API within
// 5 s (one lag, measured by the test's own long poll).
const noticeBound = 5 * time.Second

// ended waits until the instance is failed and returns it with the time the
// API first said so.
func (st *stack) ended(id string, within time.Duration) (map[string]any, time.Time) {
	st.t.Helper()
	in := st.wait(aliceToken, id, "failed", within)
	return in, time.Now()
}

// TestWatcher runs watcherDeadlines, watcherRestarts, watcherExitNoticed,
// then watcherKilledMidInvocation, on one stack with the reconciler's
// schedule off and the watcher's at watcherPeriod: a stack's start is the
// most of what each costs, and all stay sequential (they bound how late
// something is carried out or noticed). The third leaves the stack as the
// fourth needs it: its containers have ended and every watcher instance is
// still running.
func TestWatcher(t *testing.T) {
	st := start(t, setup{watcher: true, schedules: map[string]time.Duration{"ReconcilerFunction": -1, "WatcherFunction": watcherPeriod},
		container: map[string]any{"dag_node_cleanup_on_failed": "delete"}})
	watcherDeadlines(t, st)
	watcherRestarts(t, st)
	watcherExitNoticed(t, st)
	watcherKilledMidInvocation(t, st)
}

// watcherPeriod is TestWatcher's watcher schedule: short, so that the tick
// after watcherKilledMidInvocation's kill comes soon.
const watcherPeriod = 10 * time.Second

// watcherExitNoticed: with the reconciler's schedule off, a container that
// exits by itself and one removed outside berth are each reported by the
// API within noticeBound: the watcher's streams carried them.
func watcherExitNoticed(t *testing.T, st *stack) {
	st.putTemplate("exits", []string{"sh", "-c", "sleep 2; exit 3"})

	id := st.create(aliceToken, "exits", "")
	st.wait(aliceToken, id, "running", time.Minute)
	in, noticed := st.ended(id, time.Minute)
	finished, err := time.Parse(time.RFC3339Nano, in["finished_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if lag := noticed.Sub(finished); lag > noticeBound {
		t.Errorf("the exit was reported %v after it happened, want within %v", lag.Round(time.Millisecond), noticeBound)
	}
	if code, _ := in["exit_code"].(float64); code != 3 {
		t.Errorf("exit_code %v, want 3", in["exit_code"])
	}

	gone := st.create(aliceToken, "busybox", "")
	st.wait(aliceToken, gone, "running", time.Minute)
	if err := st.rt.Delete(t.Context(), runtime.Ref{InstanceID: gone, Node: "local"}); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	in, noticed = st.ended(gone, time.Minute)
	if lag := noticed.Sub(removed); lag > noticeBound {
		t.Errorf("the removal was reported %v after it, want within %v", lag.Round(time.Millisecond), noticeBound)
	}
	// A running container removed by force is killed first: the engine
	// reports its death (137), then its removal; the first one wins.
	if reason, _ := in["status_reason"].(string); !strings.Contains(reason, "removed outside berth") && !strings.Contains(reason, "137") {
		t.Errorf("status_reason %q, want the kill or the removal", reason)
	}
	if pids := st.functionPIDs("ReconcilerFunction"); len(pids) != 0 {
		t.Errorf("the reconciler ran (%d instances) with its schedule off", len(pids))
	}
}

// watcherKilledMidInvocation: every watcher instance is killed while it
// watches; the container then exits with nothing watching, and the next
// tick's invocation (the reconciler's schedule is off) replays the engine's
// events since before the gap and records the exit within one period
// (watcherPeriod) of its tick.
func watcherKilledMidInvocation(t *testing.T, st *stack) {
	const period = watcherPeriod
	id := st.create(aliceToken, "busybox", "")
	st.wait(aliceToken, id, "running", time.Minute)
	before := st.functionPIDs("WatcherFunction")
	if len(before) == 0 {
		t.Fatal("no watcher instance is running")
	}
	for _, pid := range before {
		tree := emulate.Descendants(pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for _, c := range tree {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.rt.Stop(ctx, runtime.Ref{InstanceID: id, Node: "local"}, 0); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	in, noticed := st.ended(id, 2*time.Minute)
	// The next tick comes within a period; its instance starts cold.
	if lag := noticed.Sub(killed); lag > period+noticeBound {
		t.Errorf("the exit was recorded %v after it, want within one period (%v) and %v", lag.Round(time.Millisecond), period, noticeBound)
	}
	if code, _ := in["exit_code"].(float64); code != 137 {
		t.Errorf("exit_code %v, want 137 (killed)", in["exit_code"])
	}
	if after := st.functionPIDs("WatcherFunction"); len(after) <= len(before) {
		t.Errorf("%d watcher instances started, want a new one after the kill (had %d)", len(after), len(before))
	}
}

// TestWatcherKubernetes: on a Kubernetes-only deployment with the
// reconciler's schedule off, a Pod whose container ends by itself (exit 3,
// by the test cluster's kwok stage) is reported by the API within
// noticeBound of its end: the watcher's Pod watch carried it.
func TestWatcherKubernetes(t *testing.T) {
	st := start(t, setup{kubernetesOnly: true, watcher: true, schedules: noReconciler,
		container: map[string]any{"allowed_runtimes": []string{"kubernetes"}, "create_start_timeout": "60s"}})
	tpl := map[string]any{"runtime": "kubernetes", "image": kubeImage, "command": []string{"sleep", "infinity"},
		"labels": map[string]string{"test.berth.dev/exit-code": "3", "test.berth.dev/exit-after": "4s"}}
	if r := st.do(http.MethodPut, "/api/templates/k-exits", adminToken, tpl); r.status != http.StatusCreated {
		t.Fatalf("PUT k-exits: %d %s", r.status, r.body)
	}
	id := st.create(aliceToken, "k-exits", "")
	in, noticed := st.ended(id, 2*time.Minute)
	finished, err := time.Parse(time.RFC3339Nano, in["finished_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// Kubernetes gives whole seconds: the end may read up to 1 s early.
	if lag := noticed.Sub(finished); lag > noticeBound+time.Second {
		t.Errorf("the exit was reported %v after it happened, want within %v", lag.Round(time.Millisecond), noticeBound)
	}
	if code, _ := in["exit_code"].(float64); code != 3 {
		t.Errorf("exit_code %v, want 3", in["exit_code"])
	}
	if pids := st.functionPIDs("ReconcilerFunction"); len(pids) != 0 {
		t.Errorf("the reconciler ran (%d instances) with its schedule off", len(pids))
	}
}
