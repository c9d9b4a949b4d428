package reconcile_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// (a) The store says creating, the container runs: the instance becomes
// running with its node; a running instance whose node was never recorded
// gets it backfilled. A second pass finds nothing to do.
func TestCreatingWithRunningContainerBecomesRunning(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		a := r.creating(r.create("sleeper"), "") // crashed before recording the node
		r.waitPhase(r.start(a), runtime.PhaseRunning)
		b := r.running(r.creating(r.create("sleeper"), ""), "")
		r.waitPhase(r.start(b), runtime.PhaseRunning)

		rep := r.run(r.reconciler())
		if rep.Started != 1 || rep.NodeBackfilled != 1 || rep.Instances != 2 || rep.Containers != 2 {
			t.Fatalf("report %+v: want started 1, node_backfilled 1 over 2 instances and 2 containers", rep)
		}
		got := r.get(a.ID)
		wantStatus(t, got, fsm.Running)
		if got.RuntimeNodeName != node || got.StartedAt == nil || got.RuntimeID == "" || got.StatusReason != "running" {
			t.Errorf("after sync: node %q, started_at %v, runtime_id %q, reason %q", got.RuntimeNodeName, got.StartedAt, got.RuntimeID, got.StatusReason)
		}
		if got := r.get(b.ID); got.Status != fsm.Running || got.RuntimeNodeName != node {
			t.Errorf("backfill: %s on %q, want running on %q", got.Status, got.RuntimeNodeName, node)
		}

		rep = r.run(r.reconciler())
		if rep.Actions() != 0 || rep.Conflicts != 0 {
			t.Errorf("second pass acted: %+v", rep)
		}
		noRejections(t, r, a.ID, b.ID)
	})
}

// (b) A container removed behind berth's back: the running instance fails
// with the reason once its last change is older than the grace period (and
// not before); a stopping one is taken as stopped.
func TestRemovedContainerFailsInstanceAfterGrace(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		run := r.running(r.creating(r.create("sleeper"), node), node)
		runRef := r.start(run)
		stop := r.running(r.creating(r.create("sleeper"), node), node)
		stopRef := r.start(stop)
		stop = r.move(r.move(stop, fsm.StopPending, nil), fsm.Stopping, nil)
		r.waitPhase(runRef, runtime.PhaseRunning)
		r.waitPhase(stopRef, runtime.PhaseRunning)
		for _, ref := range []runtime.Ref{runRef, stopRef} {
			if err := r.rt.Delete(testenv.Context(t, time.Minute), ref); err != nil {
				t.Fatal(err)
			}
		}

		rep := r.run(r.reconciler()) // updated a moment ago: within the grace
		if rep.Destroyed != 0 {
			t.Fatalf("destroyed within the grace period: %+v", rep)
		}
		wantStatus(t, r.get(run.ID), fsm.Running)

		r.advance(reconcile.DefaultAbsentGrace + time.Second)
		rep = r.run(r.reconciler())
		if rep.Destroyed != 2 || rep.ListPartial {
			t.Fatalf("report %+v: want destroyed 2 from a complete list", rep)
		}
		got := r.get(run.ID)
		wantStatus(t, got, fsm.Failed)
		if got.StatusReason != "container removed outside berth" || got.FinishedAt == nil {
			t.Errorf("failed with reason %q, finished_at %v", got.StatusReason, got.FinishedAt)
		}
		wantStatus(t, r.get(stop.ID), fsm.Stopped)
		noRejections(t, r, run.ID, stop.ID)
	})
}

// (c) An orphan (a berth container whose instance does not exist) is
// removed once older than the grace period, never before; the container of
// a stopped instance is kept however old.
func TestOrphanRemovedOnlyAfterGrace(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		ghost := container.Instance{ID: container.NewID(), Owner: "ghost", Template: "sleeper", Spec: container.Spec{
			Runtime: container.RuntimeDocker, Image: r.image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", "sleep 3600"}}}
		orphan := r.start(ghost)
		kept := r.running(r.creating(r.create("sleeper"), node), node)
		keptRef := r.start(kept)
		r.waitPhase(keptRef, runtime.PhaseRunning)
		if err := r.rt.Stop(testenv.Context(t, time.Minute), keptRef, 0); err != nil {
			t.Fatal(err)
		}
		r.waitPhase(keptRef, runtime.PhaseExited)
		r.move(r.move(r.move(kept, fsm.StopPending, nil), fsm.Stopping, nil), fsm.Stopped, nil)

		for _, ahead := range []time.Duration{0, reconcile.DefaultOrphanGrace - time.Minute} {
			r.advance(ahead)
			rep := r.run(r.reconciler())
			if rep.OrphansRemoved != 0 || rep.OrphansDeferred != 2 {
				t.Fatalf("%s ahead: report %+v: want nothing removed, 2 deferred", ahead, rep)
			}
			if !r.exists(orphan) {
				t.Fatalf("%s ahead: orphan removed within the grace period", ahead)
			}
		}

		r.advance(reconcile.DefaultOrphanGrace + time.Minute)
		rep := r.run(r.reconciler())
		if rep.OrphansRemoved != 1 {
			t.Fatalf("report %+v: want 1 orphan removed", rep)
		}
		if r.exists(orphan) {
			t.Error("orphan still there after the grace period")
		}
		if !r.exists(keptRef) {
			t.Error("the stopped instance's container was removed")
		}
		if !strings.Contains(r.logs.String(), `"op":"remove_orphan","instance_id":"`+ghost.ID+`"`) {
			t.Errorf("no remove_orphan log line for %s", ghost.ID)
		}
	})
}

// (d) A container that exited with code 3 while the store says running:
// failed, with the exit code.
func TestExitedContainerFailsWithExitCode(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		inst := r.running(r.creating(r.create("exit3"), node), node)
		r.waitPhase(r.start(inst), runtime.PhaseExited)

		rep := r.run(r.reconciler())
		if rep.Exited != 1 {
			t.Fatalf("report %+v: want exited 1", rep)
		}
		got := r.get(inst.ID)
		wantStatus(t, got, fsm.Failed)
		if got.ExitCode == nil || *got.ExitCode != 3 || got.StatusReason != "exited with code 3" || got.FinishedAt == nil {
			t.Errorf("exit_code %v, reason %q, finished_at %v; want 3, \"exited with code 3\"", got.ExitCode, got.StatusReason, got.FinishedAt)
		}
		evs := r.events(inst.ID)
		last := evs[len(evs)-1]
		if last.Type != container.EventFailed || last.ExitCode == nil || *last.ExitCode != 3 || last.Actor != container.ActorSystem {
			t.Errorf("last event %+v: want ContainerFailed with exit 3 by berth", last)
		}
	})
}

// (f) Two reconcilers on the same state at the same time: no errors, each
// difference applied once, the same end state as one reconciler would reach.
func TestConcurrentReconcilers(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		creating := r.creating(r.create("sleeper"), node)
		creatingRef := r.start(creating)
		removed := r.running(r.creating(r.create("sleeper"), node), node)
		removedRef := r.start(removed)
		exited := r.running(r.creating(r.create("exit3"), node), node)
		exitedRef := r.start(exited)
		stuck := r.running(r.creating(r.create("sleeper"), node), node)
		stuckRef := r.start(stuck)
		res, err := r.m.Stop(context.Background(), alice, stuck.ID, nil, "req-stop")
		if err != nil {
			t.Fatal(err)
		}
		stuck = res.Instance
		r.dispatchAll(stuck.ID) // dispatched, then lost
		orphan := r.start(container.Instance{ID: container.NewID(), Owner: "ghost", Spec: container.Spec{
			Runtime: container.RuntimeDocker, Image: r.image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", "sleep 3600"}}})
		r.waitPhase(creatingRef, runtime.PhaseRunning)
		r.waitPhase(removedRef, runtime.PhaseRunning)
		r.waitPhase(exitedRef, runtime.PhaseExited)
		r.waitPhase(stuckRef, runtime.PhaseRunning)
		if err := r.rt.Delete(testenv.Context(t, time.Minute), removedRef); err != nil {
			t.Fatal(err)
		}
		r.advance(time.Hour) // past every grace period and the stop timeout

		rcs := []*reconcile.Reconciler{r.reconciler(), r.reconciler()}
		reps := make([]reconcile.Report, len(rcs))
		errs := make([]error, len(rcs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, rc := range rcs {
			wg.Go(func() {
				<-start
				reps[i], errs[i] = rc.Run(testenv.Context(t, 2*time.Minute))
			})
		}
		close(start)
		wg.Wait()
		var sum reconcile.Report
		for i := range reps {
			if errs[i] != nil || reps[i].Errors != 0 || reps[i].Rejected != 0 {
				t.Fatalf("reconciler %d: %v, report %+v", i, errs[i], reps[i])
			}
			sum.Started += reps[i].Started
			sum.Destroyed += reps[i].Destroyed
			sum.Exited += reps[i].Exited
			sum.Requeued += reps[i].Requeued
			sum.FailedStuck += reps[i].FailedStuck
			sum.OrphansRemoved += reps[i].OrphansRemoved
		}
		t.Logf("reports: %+v / %+v", reps[0], reps[1])
		if sum.Started != 1 || sum.Destroyed != 1 || sum.Exited != 1 || sum.Requeued != 1 || sum.FailedStuck != 0 {
			t.Errorf("summed actions %+v: want started, destroyed, exited and requeued once each", sum)
		}
		if sum.OrphansRemoved < 1 || r.exists(orphan) {
			t.Errorf("orphan not removed (removed %d)", sum.OrphansRemoved)
		}
		wantStatus(t, r.get(creating.ID), fsm.Running)
		wantStatus(t, r.get(removed.ID), fsm.Failed)
		if got := r.get(exited.ID); got.Status != fsm.Failed || got.ExitCode == nil || *got.ExitCode != 3 {
			t.Errorf("exited: %s with %v, want failed with 3", got.Status, got.ExitCode)
		}
		wantStatus(t, r.get(stuck.ID), fsm.StopPending)
		if items := r.undispatched(stuck.ID); len(items) != 1 || items[0].Op != container.OpStop {
			t.Errorf("stuck stop: undispatched items %+v, want one stop", items)
		}
		noRejections(t, r, creating.ID, removed.ID, exited.ID, stuck.ID)

		// A third pass over the result changes nothing but the re-enqueued
		// stop, which is now the sweeper's (undispatched).
		rep := r.run(r.reconciler())
		if rep.Actions() != 0 || rep.StuckLeftToSweeper != 1 {
			t.Errorf("pass after the concurrent ones: %+v", rep)
		}
	})
}

// (g) One node down makes the listing partial: an instance whose container
// is absent is NOT marked destroyed, while what the listing does show
// (an exited container) is still acted on.
func TestPartialListNeverDestroys(t *testing.T) {
	t.Parallel()
	eachWith(t, []string{"down"}, func(t *testing.T, r *rig) {
		gone := r.running(r.creating(r.create("sleeper"), node), node)
		goneRef := r.start(gone)
		elsewhere := r.running(r.creating(r.create("sleeper"), "down"), "down") // on the node that does not answer
		exited := r.running(r.creating(r.create("exit3"), node), node)
		r.waitPhase(r.start(exited), runtime.PhaseExited)
		r.waitPhase(goneRef, runtime.PhaseRunning)
		if err := r.rt.Delete(testenv.Context(t, time.Minute), goneRef); err != nil {
			t.Fatal(err)
		}
		r.advance(time.Hour)

		rep := r.run(r.reconciler())
		if !rep.ListPartial || rep.Destroyed != 0 || rep.AbsentUnverified != 2 || rep.Exited != 1 {
			t.Fatalf("report %+v: want a partial list, 0 destroyed, 2 absent unverified, 1 exited", rep)
		}
		wantStatus(t, r.get(gone.ID), fsm.Running)
		wantStatus(t, r.get(elsewhere.ID), fsm.Running)
		wantStatus(t, r.get(exited.ID), fsm.Failed)
	})
}

// blindInspect is the real runtime whose Inspect fails: a listing that
// succeeded and the inspect after it did not (an engine going away).
type blindInspect struct{ runtime.Runtime }

func (blindInspect) Inspect(context.Context, runtime.Ref) (runtime.State, error) {
	return runtime.State{}, runtime.ErrUnavailable
}

// A running container whose start time the pass cannot learn (Docker's
// listing has none, the inspect failed) is left to the next pass: recorded
// at the pass's clock, the start would read after the run's own start, and
// the run's exit, judged by the run it ended, would then look late on every
// pass. The next pass, inspecting, records the run's own start.
func TestStartTimeUnknownLeftToTheNextPass(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		a := r.creating(r.create("sleeper"), node)
		ref := r.start(a)
		r.waitPhase(ref, runtime.PhaseRunning)

		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.Runtimes = []runtime.Runtime{blindInspect{r.rt}} }))
		if rep.Started != 0 {
			t.Fatalf("report %+v: a start of unknown time was recorded", rep)
		}
		wantStatus(t, r.get(a.ID), fsm.Creating)

		r.run(r.reconciler())
		got := r.get(a.ID)
		wantStatus(t, got, fsm.Running)
		st, err := r.rt.Inspect(testenv.Context(t, 30*time.Second), ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.StartedAt == nil || st.StartedAt == nil || !got.StartedAt.Equal(*st.StartedAt) {
			t.Errorf("started_at %v, the run's own start %v", got.StartedAt, st.StartedAt)
		}
	})
}
