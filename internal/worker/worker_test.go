package worker_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

func TestWorker(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("Lifecycle", func(t *testing.T) { t.Parallel(); testLifecycle(t, newRig(t, b, 0)) })
		t.Run("ExitCodes", func(t *testing.T) { t.Parallel(); testExitCodes(t, newRig(t, b, 0)) })
		t.Run("DuplicateDelivery", func(t *testing.T) { t.Parallel(); testDuplicates(t, newRig(t, b, 0)) })
		t.Run("DeleteBeforeCreate", func(t *testing.T) { t.Parallel(); testDeleteBeforeCreate(t, newRig(t, b, 0)) })
		t.Run("DeleteDuringCreate", func(t *testing.T) { t.Parallel(); testDeleteDuringCreate(t, newRig(t, b, 0)) })
		t.Run("DeleteRacesCreate", func(t *testing.T) { t.Parallel(); testDeleteRacesCreate(t, newRig(t, b, 0)) })
		t.Run("CrashBetweenRuntimeAndStatusWrite", func(t *testing.T) { t.Parallel(); testCrashAfterStart(t, newRig(t, b, 0)) })
		t.Run("ResumedCreateStartsOnce", func(t *testing.T) { t.Parallel(); testResumedCreateStartsOnce(t, newRig(t, b, 0)) })
		t.Run("RuntimeFailsThenSucceeds", func(t *testing.T) { t.Parallel(); testFailsThenSucceeds(t, newRig(t, b, 0)) })
		t.Run("RuntimeFailsAlways", func(t *testing.T) { t.Parallel(); testFailsAlways(t, newRig(t, b, 0)) })
		t.Run("InvocationDeadlineHandsBack", func(t *testing.T) { t.Parallel(); testInvocationDeadline(t, newRig(t, b, 0)) })
		t.Run("CreateConcurrencyLimit", func(t *testing.T) { t.Parallel(); testConcurrencyLimit(t, newRig(t, b, 3)) })
	})
}

func testLifecycle(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	if res := r.run(inst.ID, container.OpCreate); !res.Ack || res.Reason != "done" {
		t.Fatalf("create: %+v", res)
	}
	running := r.wantStatus(inst.ID, fsm.Running)
	if running.RuntimeNodeName != "local" || running.StartedAt == nil || running.RuntimeID == "" {
		t.Fatalf("running instance: %+v", running)
	}
	st, err := r.engine.Inspect(ctx, runtime.RefOf(running))
	if err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("engine says %+v, %v", st, err)
	}
	if _, err := r.m.Stop(ctx, alice, inst.ID, nil, "req-stop"); err != nil {
		t.Fatal(err)
	}
	if res := r.run(inst.ID, container.OpStop); res.Reason != "done" {
		t.Fatalf("stop: %+v", res)
	}
	stopped := r.wantStatus(inst.ID, fsm.Stopped)
	if stopped.FinishedAt == nil || stopped.StatusReason != "stopped on request" {
		t.Fatalf("stopped: %+v", stopped)
	}
	if st, _ := r.engine.Inspect(ctx, runtime.RefOf(stopped)); st.Phase != runtime.PhaseExited {
		t.Fatalf("engine says %s after stop", st.Phase)
	}
	if _, err := r.m.Start(ctx, alice, inst.ID, nil, "req-start"); err != nil {
		t.Fatal(err)
	}
	if res := r.run(inst.ID, container.OpStart); res.Reason != "done" {
		t.Fatalf("start: %+v", res)
	}
	r.wantStatus(inst.ID, fsm.Running)
	if _, err := r.m.Delete(ctx, alice, inst.ID, nil, "req-del"); err != nil {
		t.Fatal(err)
	}
	if res := r.run(inst.ID, container.OpDelete); res.Reason != "done" {
		t.Fatalf("delete: %+v", res)
	}
	if _, err := r.store.GetInstance(ctx, inst.ID); err == nil {
		t.Fatal("instance still there after delete")
	}
	if n := len(r.containers()); n != 0 {
		t.Fatalf("%d containers left after delete", n)
	}
	page, err := r.store.ListEvents(ctx, inst.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range page.Items {
		types = append(types, e.Type)
	}
	want := "ContainerCreateRequested ContainerCreating ContainerStarted ContainerStopRequested ContainerStopping ContainerStopped " +
		"ContainerStartRequested ContainerStarting ContainerStarted ContainerDeleteRequested ContainerDeleting ContainerDeleted"
	if strings.Join(types, " ") != want {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(types, " "), want)
	}
	if n, _ := r.store.AdmissionCount(ctx); n != 0 {
		t.Fatalf("admission %d after the create finished", n)
	}
}

func testExitCodes(t *testing.T, r *rig) {
	ok := r.create("exit0")
	bad := r.create("exit3")
	for _, id := range []string{ok.ID, bad.ID} {
		if res := r.run(id, container.OpCreate); res.Reason != "done" {
			t.Fatalf("create %s: %+v", id, res)
		}
	}
	s := r.eventually(ok.ID, fsm.Stopped)
	if s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("exit 0: %+v", s)
	}
	f := r.eventually(bad.ID, fsm.Failed)
	if f.ExitCode == nil || *f.ExitCode != 3 || !strings.Contains(f.StatusReason, "3") {
		t.Fatalf("exit 3: %+v", f)
	}
}

func testDuplicates(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	it := r.item(inst.ID, container.OpCreate)
	if res := r.w.Process(ctx, delivery(t, it, 1)); res.Reason != "done" {
		t.Fatalf("first: %+v", res)
	}
	before := r.wantStatus(inst.ID, fsm.Running)
	for i := 0; i < 3; i++ {
		res := r.w.Process(ctx, delivery(t, it, 1))
		if !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
			t.Fatalf("duplicate %d: %+v", i, res)
		}
	}
	if after := r.get(inst.ID); after.Version != before.Version {
		t.Fatalf("a duplicate changed the instance: v%d → v%d", before.Version, after.Version)
	}
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	// Duplicates of a stop and a delete, including after the instance is gone.
	if _, err := r.m.Delete(ctx, alice, inst.ID, nil, ""); err != nil {
		t.Fatal(err)
	}
	del := r.item(inst.ID, container.OpDelete)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.w.Process(ctx, delivery(t, del, 1)) }()
	}
	wg.Wait()
	if _, err := r.store.GetInstance(ctx, inst.ID); err == nil {
		t.Fatal("instance survived concurrent duplicate deletes")
	}
	if n := len(r.containers()); n != 0 {
		t.Fatalf("%d containers after delete", n)
	}
}

func testDeleteBeforeCreate(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	create := r.item(inst.ID, container.OpCreate)
	if _, err := r.m.Delete(ctx, alice, inst.ID, nil, ""); err != nil {
		t.Fatal(err)
	}
	if res := r.run(inst.ID, container.OpDelete); res.Reason != "done" {
		t.Fatalf("delete: %+v", res)
	}
	res := r.w.Process(ctx, delivery(t, create, 1))
	if !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
		t.Fatalf("late create: %+v", res)
	}
	if n := len(r.containers()); n != 0 {
		t.Fatalf("a late create left %d containers", n)
	}
	if n, _ := r.store.AdmissionCount(ctx); n != 0 {
		t.Fatalf("admission %d", n)
	}
}

// testDeleteDuringCreate: the delete runs between the create's runtime
// Create and its Start; the create must remove what it made.
func testDeleteDuringCreate(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	create := r.item(inst.ID, container.OpCreate)
	r.rt.startFails.Store(1) // first create attempt: container made and started, then "crash"
	if res := r.w.Process(ctx, delivery(t, create, 1)); res.Ack {
		t.Fatalf("crashed attempt acknowledged: %+v", res)
	}
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers after the crashed attempt, want 1", n)
	}
	if _, err := r.m.Delete(ctx, alice, inst.ID, nil, ""); err != nil {
		t.Fatal(err)
	}
	// The retried create finds the instance being deleted: it no longer applies.
	res := r.w.Process(ctx, delivery(t, create, 2))
	if !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
		t.Fatalf("retried create: %+v", res)
	}
	if res := r.run(inst.ID, container.OpDelete); res.Reason != "done" {
		t.Fatalf("delete: %+v", res)
	}
	if _, err := r.store.GetInstance(ctx, inst.ID); err == nil {
		t.Fatal("instance not deleted")
	}
	if n := len(r.containers()); n != 0 {
		t.Fatalf("%d containers left, want 0", n)
	}
}

// testDeleteRacesCreate: the delete worker runs to the end between the
// create's claim and its runtime Create (so it removed nothing); the create
// must notice and remove the container it then made.
func testDeleteRacesCreate(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	create := r.item(inst.ID, container.OpCreate)
	r.rt.beforeCreate = func() {
		if _, err := r.m.Delete(ctx, alice, inst.ID, nil, ""); err != nil {
			t.Error(err)
			return
		}
		if res := r.run(inst.ID, container.OpDelete); res.Reason != "done" {
			t.Errorf("delete: %+v", res)
		}
	}
	res := r.w.Process(ctx, delivery(t, create, 1))
	if !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
		t.Fatalf("create that lost the race: %+v", res)
	}
	if n := len(r.containers()); n != 0 {
		t.Fatalf("%d orphaned containers, want 0", n)
	}
}

func testCrashAfterStart(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	it := r.item(inst.ID, container.OpCreate)
	r.rt.startFails.Store(1)
	res := r.w.Process(ctx, delivery(t, it, 1))
	if res.Ack || res.Delay <= 0 {
		t.Fatalf("crashed attempt: %+v", res)
	}
	// The state loop may already have seen the container start.
	if st := r.get(inst.ID).Status; st != fsm.Creating && st != fsm.Running {
		t.Fatalf("after the crash: %s", st)
	}
	if res := r.w.Process(ctx, delivery(t, it, 2)); !res.Ack {
		t.Fatalf("retry: %+v", res)
	}
	r.wantStatus(inst.ID, fsm.Running)
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers after the retry, want 1 (adopted)", n)
	}
	ob, _ := r.store.GetOutbox(ctx, it.ID)
	if ob.State != container.OutboxDone || ob.Attempts != 1 {
		t.Fatalf("outbox after retry: %+v", ob)
	}
}

func testFailsThenSucceeds(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	it := r.item(inst.ID, container.OpCreate)
	r.rt.createFails.Store(2)
	for attempt := 1; attempt <= 2; attempt++ {
		res := r.w.Process(ctx, delivery(t, it, attempt))
		if res.Ack || res.Delay <= 0 || !strings.HasPrefix(res.Reason, "retry") {
			t.Fatalf("attempt %d: %+v", attempt, res)
		}
	}
	if res := r.w.Process(ctx, delivery(t, it, 3)); res.Reason != "done" {
		t.Fatalf("attempt 3: %+v", res)
	}
	r.wantStatus(inst.ID, fsm.Running)
}

func testFailsAlways(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("sleeper")
	it := r.item(inst.ID, container.OpCreate)
	r.rt.alwaysFail.Store(true)
	for attempt := 1; attempt <= 4; attempt++ {
		if res := r.w.Process(ctx, delivery(t, it, attempt)); res.Ack || !strings.HasPrefix(res.Reason, "retry") {
			t.Fatalf("attempt %d: %+v", attempt, res)
		}
	}
	res := r.w.Process(ctx, delivery(t, it, 5))
	if res.Ack || !strings.HasPrefix(res.Reason, "dead-letter") {
		t.Fatalf("last attempt must leave the message to the DLQ: %+v", res)
	}
	failed := r.wantStatus(inst.ID, fsm.Failed)
	if !strings.Contains(failed.StatusReason, "injected") || !strings.Contains(failed.StatusReason, "5 attempts") {
		t.Fatalf("status_reason %q", failed.StatusReason)
	}
	if n, _ := r.store.AdmissionCount(ctx); n != 0 {
		t.Fatalf("admission counter %d after the failed create, want 0", n)
	}
	ob, _ := r.store.GetOutbox(ctx, it.ID)
	if ob.State != container.OutboxFailed || ob.Attempts != 5 {
		t.Fatalf("outbox: %+v", ob)
	}
	// The failed instance can be deleted normally.
	if _, err := r.m.Delete(ctx, alice, inst.ID, nil, ""); err != nil {
		t.Fatal(err)
	}
	r.rt.alwaysFail.Store(false)
	if res := r.run(inst.ID, container.OpDelete); res.Reason != "done" {
		t.Fatalf("delete: %+v", res)
	}
}

// testConcurrencyLimit: creates delivered all at once hold at most the
// rig's limit (3) of runtime creates in flight, and all of them finish.
// n is four rounds of the limit: enough for the limit to be reached and
// held, few enough that real containers are not most of the suite's time.
func testConcurrencyLimit(t *testing.T, r *rig) {
	ctx := context.Background()
	r.rt.slowStable = 300 * 1e6 // 300 ms after Start before it counts as running
	const n = 12
	var items []container.OutboxItem
	for i := 0; i < n; i++ {
		inst := r.create("sleeper")
		items = append(items, r.item(inst.ID, container.OpCreate))
	}
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := r.w.Process(ctx, delivery(t, it, 1)); res.Reason != "done" {
				t.Errorf("create %s: %+v", it.InstanceID, res)
			}
		}()
	}
	wg.Wait()
	r.rt.mu.Lock()
	maxFlight := r.rt.maxFlight
	r.rt.mu.Unlock()
	if maxFlight > 3 || maxFlight < 2 {
		t.Fatalf("max creates in flight at the runtime: %d, want ≤ 3 (and the limit used)", maxFlight)
	}
	page, err := r.store.ListInstances(ctx, store.ListQuery{Owner: "alice", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range page.Items {
		if inst.Status != fsm.Running {
			t.Fatalf("%s is %s", inst.ID, inst.Status)
		}
	}
	if len(page.Items) != n {
		t.Fatalf("%d instances", len(page.Items))
	}
	t.Logf("max in flight at the runtime: %d (limit 3)", maxFlight)
}

// testInvocationDeadline: a create whose container is not stable when its
// invocation's deadline draws near stops waiting InvocationMargin before
// it and hands the message back (a retry, its container kept, the
// instance not failed); the redelivery finishes the create, or finds it
// finished by the state loop, which saw the container start meanwhile.
func testInvocationDeadline(t *testing.T, r *rig) {
	r.rt.mu.Lock()
	r.rt.slowStable = time.Hour
	r.rt.mu.Unlock()
	inst := r.create("sleeper")
	it := r.item(inst.ID, container.OpCreate)
	ctx, cancel := context.WithTimeout(context.Background(), worker.InvocationMargin+2*time.Second)
	defer cancel()
	res := r.w.Process(ctx, delivery(t, it, 1))
	if res.Ack || !strings.Contains(res.Reason, "handed back") {
		t.Fatalf("first attempt: %+v, want a retry that hands the create back", res)
	}
	if ctx.Err() != nil {
		t.Fatal("the create waited until the invocation's deadline")
	}
	if got := r.get(inst.ID); got.Status == fsm.Failed {
		t.Fatalf("instance failed on a hand-back: %+v", got)
	}
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers after the hand-back, want the one being created", n)
	}
	r.rt.mu.Lock()
	r.rt.slowStable = 0
	r.rt.mu.Unlock()
	if res := r.w.Process(context.Background(), delivery(t, it, 2)); !res.Ack {
		t.Fatalf("second attempt: %+v", res)
	}
	r.eventually(inst.ID, fsm.Running)
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers after the second attempt, want 1 (adopted)", n)
	}
}
