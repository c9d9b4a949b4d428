package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// The group cleanup policies (the DAG keys of the container: config section), on both stores and a
// real Docker engine: each key changes what happens to a member, the
// policy travels as an outbox item written with what asked for it, and a
// repeated delivery applies it once.
func TestGroupPolicies(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("delete_container_on_node_success=true", func(t *testing.T) {
			t.Parallel()
			testSuccessDeleted(t, newRigWith(t, b, 0, manager.GroupPolicies{DeleteOnSuccess: true}))
		})
		t.Run("delete_container_on_node_success=true, member started again first", func(t *testing.T) {
			t.Parallel()
			testSuccessRestarted(t, newRigWith(t, b, 0, manager.GroupPolicies{DeleteOnSuccess: true}))
		})
		t.Run("delete_container_on_node_success=false", func(t *testing.T) {
			t.Parallel()
			testSuccessKept(t, newRigWith(t, b, 0, manager.GroupPolicies{DeleteOnSuccess: false, OnFailed: config.CleanupDelete}))
		})
		for _, p := range []config.CleanupPolicy{config.CleanupNone, config.CleanupStop, config.CleanupDelete} {
			t.Run("dag_node_cleanup_on_failed="+string(p), func(t *testing.T) {
				t.Parallel()
				testFailedPolicy(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFailed: p}), p)
			})
		}
		t.Run("dag_node_cleanup_on_dag_finished=delete", func(t *testing.T) {
			t.Parallel()
			testFinishDelete(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFinished: config.CleanupDelete}))
		})
		t.Run("dag_node_cleanup_on_dag_finished=stop", func(t *testing.T) {
			t.Parallel()
			testFinishStop(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFinished: config.CleanupStop}))
		})
		t.Run("dag_node_cleanup_on_dag_finished=none", func(t *testing.T) {
			t.Parallel()
			testFinishNone(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFinished: config.CleanupNone}))
		})
		t.Run("cleanup_dag_node_containers_before_start", func(t *testing.T) {
			t.Parallel()
			testReset(t, b)
		})
		t.Run("dag_node_cleanup_on_failed after the last attempt", func(t *testing.T) {
			t.Parallel()
			testFailedAfterAttempts(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFailed: config.CleanupDelete}))
		})
		t.Run("recover_running_dag_on_start=false", func(t *testing.T) {
			t.Parallel()
			testInterrupt(t, newRigWith(t, b, 0, manager.GroupPolicies{OnFailed: config.CleanupDelete}))
		})
	})
}

var bob = identity.Caller{User: "bob"}

func (r *rig) member(tpl, group string) container.Instance {
	r.t.Helper()
	res, err := r.m.CreateByTemplate(context.Background(), alice, manager.CreateRequest{Template: tpl, Group: group}, nil, "req-"+tpl)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Instance
}

// itemsOf returns the instance's unfinished outbox items of op.
func (r *rig) itemsOf(id string, op container.Op) []container.OutboxItem {
	r.t.Helper()
	items, err := r.store.ListUndispatched(context.Background(), time.Now().Add(time.Hour), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []container.OutboxItem
	for _, it := range items {
		if it.InstanceID == id && it.Op == op {
			out = append(out, it)
		}
	}
	return out
}

func (r *rig) items(id string, op container.Op) int { return len(r.itemsOf(id, op)) }

func (r *rig) events(id string) []container.Event {
	r.t.Helper()
	page, err := r.store.ListEvents(context.Background(), id, "", 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return page.Items
}

func countEvents(evs []container.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (r *rig) mustRun(id string, op container.Op, want string) {
	r.t.Helper()
	if res := r.run(id, op); !strings.HasPrefix(res.Reason, want) {
		r.t.Fatalf("%s of %s: %+v, want %q", op, id, res, want)
	}
}

// settled is eventually with the instance's history in the failure.
func (r *rig) settled(id string, want fsm.Status) container.Instance {
	r.t.Helper()
	inst, err := r.m.Wait(context.Background(), identity.Caller{User: "root", Admin: true}, id, want, 20*time.Second)
	if err != nil {
		var b strings.Builder
		for _, e := range r.events(id) {
			b.WriteString("\n  " + e.Type + " " + string(e.From) + "→" + string(e.To) + " " + e.At.Format(time.RFC3339Nano) + " " + e.Message)
		}
		r.t.Fatalf("waiting for %s to be %s: %v%s", id, want, err, b.String())
	}
	return inst
}

func (r *rig) gone(id string) {
	r.t.Helper()
	if _, err := r.store.GetInstance(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		r.t.Fatalf("instance %s still there: %v", id, err)
	}
	for _, st := range r.containers() {
		if st.InstanceID == id {
			r.t.Fatalf("container of %s still there: %+v", id, st)
		}
	}
}

func testSuccessDeleted(t *testing.T, r *rig) {
	ctx := context.Background()
	member, loner := r.member("exit0", "dag"), r.member("exit0", "")
	r.mustRun(member.ID, container.OpCreate, "done")
	r.mustRun(loner.ID, container.OpCreate, "done")
	r.settled(member.ID, fsm.Stopped)
	r.settled(loner.ID, fsm.Stopped)
	if n := r.items(loner.ID, container.OpCleanupDelete); n != 0 {
		t.Fatalf("an instance without a group got %d cleanup items", n)
	}
	// The exit is reported by the worker and by the runtime's event stream
	// (which may also replay the start, and so the exit, once more): however
	// many cleanup items that leaves, and however often each is delivered,
	// the member gets one delete request.
	done := 0
	for _, it := range r.itemsOf(member.ID, container.OpCleanupDelete) {
		for receive := 1; receive <= 2; receive++ {
			if res := r.w.Process(ctx, delivery(t, it, receive)); res.Reason == "done" {
				done++
			}
		}
	}
	if done != 1 {
		t.Fatalf("cleanup applied %d times, want 1", done)
	}
	r.wantStatus(member.ID, fsm.DeletePending)
	r.mustRun(member.ID, container.OpDelete, "done")
	r.gone(member.ID)
	evs := r.events(member.ID)
	if countEvents(evs, container.EventDeleteRequested) != 1 || evs[len(evs)-1].Type != container.EventDeleted {
		t.Fatalf("events: %+v", evs)
	}
	if ex := evs[countUntil(evs, container.EventExited)]; !strings.Contains(ex.Message, "delete_container_on_node_success") {
		t.Fatalf("exit event does not name the policy: %+v", ex)
	}
	r.wantStatus(loner.ID, fsm.Stopped)
}

func countUntil(evs []container.Event, typ string) int {
	for i, e := range evs {
		if e.Type == typ {
			return i
		}
	}
	return len(evs) - 1
}

func testSuccessKept(t *testing.T, r *rig) {
	member := r.member("exit0", "dag")
	r.mustRun(member.ID, container.OpCreate, "done")
	s := r.settled(member.ID, fsm.Stopped)
	if s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("member: %+v", s)
	}
	for _, op := range []container.Op{container.OpCleanupDelete, container.OpCleanupStop} {
		if n := r.items(member.ID, op); n != 0 {
			t.Fatalf("%d %s items for a successful member with delete_container_on_node_success false", n, op)
		}
	}
}

func testFailedPolicy(t *testing.T, r *rig, p config.CleanupPolicy) {
	member, loner := r.member("exit3", "dag"), r.member("exit3", "")
	r.mustRun(member.ID, container.OpCreate, "done")
	r.mustRun(loner.ID, container.OpCreate, "done")
	f := r.settled(member.ID, fsm.Failed)
	r.settled(loner.ID, fsm.Failed)
	if n := r.items(loner.ID, container.OpCleanupStop) + r.items(loner.ID, container.OpCleanupDelete); n != 0 {
		t.Fatalf("an instance without a group got %d cleanup items", n)
	}
	switch p {
	case config.CleanupNone:
		if n := r.items(member.ID, container.OpCleanupStop) + r.items(member.ID, container.OpCleanupDelete); n != 0 {
			t.Fatalf("policy none wrote %d cleanup items", n)
		}
		if len(r.containers()) != 2 {
			t.Fatalf("containers: %+v", r.containers())
		}
	case config.CleanupStop:
		if !strings.Contains(f.StatusReason, "dag_node_cleanup_on_failed=stop") {
			t.Fatalf("reason: %q", f.StatusReason)
		}
		r.mustRun(member.ID, container.OpCleanupStop, "done")
		in := r.wantStatus(member.ID, fsm.Failed)
		if in.ExitCode == nil || *in.ExitCode != 3 {
			t.Fatalf("member after stop: %+v", in)
		}
		halted := 0
		for _, ev := range r.events(member.ID) {
			if ev.Type == container.EventStopped && ev.From == fsm.Failed && ev.To == fsm.Failed {
				halted++
			}
		}
		if halted != 1 {
			t.Fatalf("%d ContainerStopped events on the failed member, want 1: %+v", halted, r.events(member.ID))
		}
	case config.CleanupDelete:
		r.mustRun(member.ID, container.OpCleanupDelete, "done")
		r.mustRun(member.ID, container.OpDelete, "done")
		r.gone(member.ID)
		if evs := r.events(member.ID); evs[len(evs)-1].Type != container.EventDeleted {
			t.Fatalf("events: %+v", evs)
		}
	}
}

// finishSetup makes a running member and two queued (pending) ones.
func finishSetup(r *rig) (running container.Instance, queued []container.Instance) {
	running = r.member("sleeper", "dag")
	r.mustRun(running.ID, container.OpCreate, "done")
	r.wantStatus(running.ID, fsm.Running)
	return running, []container.Instance{r.member("sleeper", "dag"), r.member("sleeper", "dag")}
}

func actions(res container.GroupResult) map[string]string {
	out := map[string]string{}
	for _, m := range res.Members {
		out[m.ID] = m.Action
	}
	return out
}

func testFinishDelete(t *testing.T, r *rig) {
	ctx := context.Background()
	running, queued := finishSetup(r)
	// Another user's group of the same name is theirs alone.
	res, err := r.m.FinishGroup(ctx, bob, "", "dag", manager.OutcomeSucceeded, "req-bob")
	if err != nil || len(res.Members) != 0 {
		t.Fatalf("bob's finish: %+v %v", res, err)
	}
	if _, err := r.m.GetGroup(ctx, bob, "", "dag"); !errors.Is(err, manager.ErrNotFound) {
		t.Fatalf("bob's get: %v", err)
	}
	if _, err := r.m.FinishGroup(ctx, alice, "", "dag", "done", "req"); err == nil {
		t.Fatal("an unknown outcome was accepted")
	}
	res, err = r.m.FinishGroup(ctx, alice, "", "dag", manager.OutcomeSucceeded, "req-finish")
	if err != nil {
		t.Fatal(err)
	}
	acts := actions(res)
	if acts[running.ID] != container.ActionCleanupRequested || acts[queued[0].ID] != container.ActionDeleteRequested || acts[queued[1].ID] != container.ActionDeleteRequested {
		t.Fatalf("actions: %+v", res)
	}
	for _, q := range queued {
		// The queued member's create comes after the finish: it is let go.
		r.mustRun(q.ID, container.OpCreate, "stale")
		r.mustRun(q.ID, container.OpDelete, "done")
		r.gone(q.ID)
	}
	r.mustRun(running.ID, container.OpGroupDelete, "done")
	r.mustRun(running.ID, container.OpDelete, "done")
	r.gone(running.ID)
	if n := len(r.containers()); n != 0 {
		t.Fatalf("%d containers left", n)
	}
	if _, err := r.m.GetGroup(ctx, alice, "", "dag"); !errors.Is(err, manager.ErrNotFound) {
		t.Fatalf("group after finish: %v", err)
	}
}

func testFinishStop(t *testing.T, r *rig) {
	ctx := context.Background()
	running, queued := finishSetup(r)
	res, err := r.m.FinishGroup(ctx, alice, "", "dag", manager.OutcomeFailed, "req-finish")
	if err != nil {
		t.Fatal(err)
	}
	acts := actions(res)
	if acts[running.ID] != container.ActionCleanupRequested || acts[queued[0].ID] != container.ActionCancelled {
		t.Fatalf("actions: %+v", res)
	}
	for _, q := range queued {
		in := r.wantStatus(q.ID, fsm.Failed)
		if !strings.Contains(in.StatusReason, "cancelled") {
			t.Fatalf("queued member: %+v", in)
		}
		r.mustRun(q.ID, container.OpCreate, "stale")
	}
	r.mustRun(running.ID, container.OpGroupStop, "done")
	r.wantStatus(running.ID, fsm.StopPending)
	r.mustRun(running.ID, container.OpStop, "done")
	r.wantStatus(running.ID, fsm.Stopped)
	if n := len(r.containers()); n != 1 {
		t.Fatalf("%d containers, want the stopped member's only", n)
	}
	g, err := r.m.GetGroup(ctx, alice, "", "dag")
	if err != nil || g.Total != 3 || g.Counts[fsm.Failed] != 2 || g.Counts[fsm.Stopped] != 1 {
		t.Fatalf("group: %+v %v", g, err)
	}
}

func testFinishNone(t *testing.T, r *rig) {
	ctx := context.Background()
	running, queued := finishSetup(r)
	res, err := r.m.FinishGroup(ctx, alice, "", "dag", manager.OutcomeCancelled, "req-finish")
	if err != nil {
		t.Fatal(err)
	}
	acts := actions(res)
	if acts[running.ID] != container.ActionNone || acts[queued[1].ID] != container.ActionCancelled {
		t.Fatalf("actions: %+v", res)
	}
	r.wantStatus(running.ID, fsm.Running)
	r.mustRun(queued[0].ID, container.OpCreate, "stale")
}

func testReset(t *testing.T, b teststores.Backend) {
	ctx := context.Background()
	off := newRigWith(t, b, 0, manager.GroupPolicies{ResetAllowed: false})
	off.member("sleeper", "dag")
	if _, err := off.m.ResetGroup(ctx, alice, "", "dag", "req"); !errors.Is(err, manager.ErrResetDisabled) {
		t.Fatalf("reset with the key false: %v", err)
	}

	r := newRigWith(t, b, 0, manager.GroupPolicies{ResetAllowed: true})
	running, queued := finishSetup(r)
	failed := r.member("exit3", "dag")
	r.mustRun(failed.ID, container.OpCreate, "done")
	r.settled(failed.ID, fsm.Failed)
	other := r.member("sleeper", "other")
	res, err := r.m.ResetGroup(ctx, alice, "", "dag", "req-reset")
	if err != nil || len(res.Members) != 4 {
		t.Fatalf("reset: %+v %v", res, err)
	}
	for _, q := range queued {
		r.mustRun(q.ID, container.OpCreate, "stale")
		r.mustRun(q.ID, container.OpDelete, "done")
		r.gone(q.ID)
	}
	for _, m := range []container.Instance{running, failed} {
		r.mustRun(m.ID, container.OpGroupDelete, "done")
		r.mustRun(m.ID, container.OpDelete, "done")
		r.gone(m.ID)
	}
	r.wantStatus(other.ID, fsm.Pending)
	// A reset of an empty group has nothing to do.
	if res, err := r.m.ResetGroup(ctx, alice, "", "dag", "req-again"); err != nil || len(res.Members) != 0 {
		t.Fatalf("second reset: %+v %v", res, err)
	}
}

func testInterrupt(t *testing.T, r *rig) {
	ctx := context.Background()
	running := r.member("sleeper", "dag")
	r.mustRun(running.ID, container.OpCreate, "done")
	queued, loner := r.member("sleeper", "dag"), r.member("sleeper", "")
	n, err := r.m.InterruptGroups(ctx)
	if err != nil || n != 1 {
		t.Fatalf("InterruptGroups: %d %v", n, err)
	}
	in := r.wantStatus(queued.ID, fsm.Failed)
	if !strings.HasPrefix(in.StatusReason, manager.InterruptedReason) || !strings.Contains(in.StatusReason, "dag_node_cleanup_on_failed=delete") {
		t.Fatalf("interrupted member: %q", in.StatusReason)
	}
	r.mustRun(queued.ID, container.OpCreate, "stale")
	r.mustRun(queued.ID, container.OpCleanupDelete, "done")
	r.mustRun(queued.ID, container.OpDelete, "done")
	r.gone(queued.ID)
	r.wantStatus(running.ID, fsm.Running)
	r.wantStatus(loner.ID, fsm.Pending)
}

// testFailedAfterAttempts: a member failed by its worker (the runtime
// refused every attempt) gets dag_node_cleanup_on_failed, and a failing
// cleanup never fails anything itself.
func testFailedAfterAttempts(t *testing.T, r *rig) {
	ctx := context.Background()
	member := r.member("sleeper", "dag")
	it := r.item(member.ID, container.OpCreate)
	r.rt.alwaysFail.Store(true)
	for attempt := 1; attempt <= 5; attempt++ {
		r.w.Process(ctx, delivery(t, it, attempt))
	}
	f := r.wantStatus(member.ID, fsm.Failed)
	if !strings.Contains(f.StatusReason, "5 attempts") || !strings.Contains(f.StatusReason, "dag_node_cleanup_on_failed=delete") {
		t.Fatalf("reason: %q", f.StatusReason)
	}
	r.rt.alwaysFail.Store(false)
	r.mustRun(member.ID, container.OpCleanupDelete, "done")
	r.mustRun(member.ID, container.OpDelete, "done")
	r.gone(member.ID)
}

// testSuccessRestarted: a member started again before its node policy is
// applied has begun another run: the old policy lets it be.
func testSuccessRestarted(t *testing.T, r *rig) {
	ctx := context.Background()
	member := r.member("exit0", "dag")
	r.mustRun(member.ID, container.OpCreate, "done")
	r.settled(member.ID, fsm.Stopped)
	items := r.itemsOf(member.ID, container.OpCleanupDelete)
	if len(items) == 0 {
		t.Fatal("no cleanup item after the exit")
	}
	if _, err := r.m.Start(ctx, alice, member.ID, nil, "req-again"); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if res := r.w.Process(ctx, delivery(t, it, 1)); !strings.Contains(res.Reason, "started again") {
			t.Fatalf("cleanup of a restarted member: %+v", res)
		}
	}
	r.wantStatus(member.ID, fsm.StartPending)
}
