package emulate_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
)

// TestPauseThroughFrontDoor, on the emulated AWS stack (api function →
// DynamoDB → stream → dispatcher → SQS → worker function → the real
// engine; the watcher and the reconciler on their schedules): a pause keeps
// a process's memory (a counter in a shell variable stands still while
// paused, over reconciler passes that leave it paused and unrestarted, and
// carries on after the resume from where it was, never from 1); a pause
// and a resume made outside berth are recognised by the AWS path's state
// loop (the watcher's events, or the reconciler's listing) as berth's own.
func TestPauseThroughFrontDoor(t *testing.T) {
	t.Parallel()
	st := start(t, setup{watcher: true, scheduleEvery: 2 * time.Second})
	st.putTemplate("counter", []string{"sh", "-c", `i=0; while :; do i=$$((i+1)); echo $$i; sleep 0.1; done`})
	id := st.create(aliceToken, "counter", "counter")
	st.wait(aliceToken, id, "running", time.Minute)
	counted := func() []int {
		r := st.do(http.MethodGet, "/api/containers/"+id+"/logs", aliceToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("logs: %d %s", r.status, r.body)
		}
		var out []int
		for _, l := range strings.Fields(string(r.body)) {
			n, err := strconv.Atoi(l)
			if err != nil {
				t.Fatalf("counter printed %q", l)
			}
			out = append(out, n)
		}
		return out
	}
	last := func() int {
		ns := counted()
		if len(ns) == 0 {
			return 0
		}
		return ns[len(ns)-1]
	}
	until := func(what string, cond func() bool) {
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	until("the counter counts", func() bool { return last() >= 5 })

	p := "/api/containers/" + id
	if r := st.do(http.MethodPost, p+"/pause", bobToken, nil); r.status != http.StatusNotFound {
		t.Fatalf("another owner's pause: %d %s", r.status, r.body)
	}
	if r := st.do(http.MethodPost, p+"/pause", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "paused", time.Minute)
	ref := runtime.Ref{InstanceID: id, Node: "local"}
	if s, err := st.rt.Inspect(t.Context(), ref); err != nil || s.Phase != runtime.PhasePaused {
		t.Fatalf("the engine's container: %+v, %v; want paused", s, err)
	}
	before := last()
	passes := invocations(st.logs.String(), "ReconcilerFunction")
	until("two reconciler passes", func() bool { return invocations(st.logs.String(), "ReconcilerFunction") >= passes+2 })
	if now := last(); now != before {
		t.Fatalf("the counter moved while paused: %d → %d", before, now)
	}
	if in := st.do(http.MethodGet, p, aliceToken, nil).json(t); in["status"] != "paused" || in["restart_at"] != nil {
		t.Fatalf("after reconciler passes: %v", in)
	}

	// Outside berth: the state loop on the AWS path follows.
	if err := st.rt.Resume(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	st.wait(aliceToken, id, "running", time.Minute)
	if err := st.rt.Pause(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	st.wait(aliceToken, id, "paused", time.Minute)

	if r := st.do(http.MethodPost, p+"/resume", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "running", time.Minute)
	until("the counter counts on", func() bool { return last() > before+3 })
	for i, n := range counted() {
		if n != i+1 {
			t.Fatalf("the counter printed %d as its value number %d: it restarted or lost its memory", n, i+1)
		}
	}
	r := st.do(http.MethodGet, p+"/events?limit=100", aliceToken, nil)
	var page struct {
		Items []struct{ Type, Actor string }
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, ev := range page.Items {
		count[ev.Type]++
	}
	if count["ContainerPaused"] != 2 || count["ContainerResumed"] != 2 || count["TransitionRejected"] != 0 || count["ContainerRestartScheduled"] != 0 {
		t.Errorf("history: %+v, want two pauses and two resumes, nothing rejected or restarted", page.Items)
	}
}

// invocations counts fn's finished invocations in the emulator's log.
func invocations(logs, fn string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Function string }
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "invoke" && rec.Function == fn {
			n++
		}
	}
	return n
}
