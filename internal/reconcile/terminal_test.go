package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/testenv"
)

// Terminal instances are reconciled too: a failed instance whose container
// was started behind berth's back gets its container stopped (failed →
// running is not allowed) and a ContainerReconciled event; a stopped one
// whose container runs is recorded as running (stopped → running is); a
// stopped one whose container has exited is left as it is. A second pass
// finds nothing to do.
func TestTerminalInstancesConverge(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		terminal := func(to fsm.Status) (container.Instance, runtime.Ref) {
			inst := r.running(r.creating(r.create("sleeper"), node), node)
			ref := r.start(inst)
			r.waitPhase(ref, runtime.PhaseRunning)
			return r.move(inst, to, nil), ref // the container keeps running, as after a `docker start`
		}
		failed, failedRef := terminal(fsm.Failed)
		stopped, stoppedRef := terminal(fsm.Stopped)
		quiet, quietRef := terminal(fsm.Stopped)
		if err := r.rt.Stop(testenv.Context(t, time.Minute), quietRef, 0); err != nil {
			t.Fatal(err)
		}
		r.advance(time.Hour) // past the orphan grace of the containers

		rep := r.run(r.reconciler())
		if rep.TerminalStopped != 1 || rep.Started != 1 || rep.Rejected != 0 || rep.OrphansRemoved != 0 {
			t.Fatalf("report %+v: want 1 failed instance's container stopped, 1 stopped instance recorded running", rep)
		}
		wantStatus(t, r.get(failed.ID), fsm.Failed)
		if st := r.waitPhase(failedRef, runtime.PhaseExited); st.Phase != runtime.PhaseExited {
			t.Fatalf("failed instance's container: %s", st.Phase)
		}
		evs := r.events(failed.ID)
		if last := evs[len(evs)-1]; last.Type != container.EventReconciled || last.Actor != container.ActorSystem {
			t.Errorf("failed instance's last event %+v, want %s", last, container.EventReconciled)
		}
		running := r.get(stopped.ID)
		wantStatus(t, running, fsm.Running)
		if running.StartedAt == nil {
			t.Errorf("recorded running without started_at: %+v", running)
		}
		if st := r.waitPhase(stoppedRef, runtime.PhaseRunning); st.Phase != runtime.PhaseRunning {
			t.Fatalf("stopped instance's container: %s", st.Phase)
		}
		if got := r.get(quiet.ID); got.Status != fsm.Stopped || got.Version != quiet.Version {
			t.Errorf("stopped instance with an exited container was touched: %+v", got)
		}

		if rep := r.run(r.reconciler()); rep.Actions() != 0 {
			t.Fatalf("second pass: %+v, want nothing left to do", rep)
		}
		noRejections(t, r, failed.ID, stopped.ID, quiet.ID)
	})
}

// A terminal instance's container is brought in line however young it is:
// the orphan grace protects a create in flight, which a stopped or failed
// instance does not have. Before, a failed instance whose container was
// started behind berth's back ran on until the container was older than
// orphan_grace (5 minutes by default).
func TestTerminalInstancesConvergeWhateverTheirAge(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		terminal := func(to fsm.Status) (container.Instance, runtime.Ref) {
			inst := r.running(r.creating(r.create("sleeper"), node), node)
			ref := r.start(inst)
			r.waitPhase(ref, runtime.PhaseRunning)
			return r.move(inst, to, nil), ref // the container keeps running, as after a `docker start`
		}
		failed, failedRef := terminal(fsm.Failed)
		stopped, _ := terminal(fsm.Stopped)

		rep := r.run(r.reconciler()) // the containers are seconds old
		if rep.TerminalStopped != 1 || rep.Started != 1 || rep.OrphansRemoved != 0 {
			t.Fatalf("report %+v: want the young containers of 1 failed instance stopped, 1 stopped instance recorded running", rep)
		}
		if st := r.waitPhase(failedRef, runtime.PhaseExited); st.Phase != runtime.PhaseExited {
			t.Fatalf("failed instance's container: %s", st.Phase)
		}
		wantStatus(t, r.get(failed.ID), fsm.Failed)
		wantStatus(t, r.get(stopped.ID), fsm.Running)
		noRejections(t, r, failed.ID, stopped.ID)
	})
}

// laggingList is the real runtime whose listing lags behind the engine's
// own state: it answers with the listing taken at snapshot. Docker's list
// reads a view the daemon updates after it has sent a container's "die"
// event, so a container can be listed running after its exit was seen.
type laggingList struct {
	*docker.Runtime
	listed []runtime.State
}

func (l *laggingList) snapshot(t *testing.T) {
	t.Helper()
	states, err := l.Runtime.List(testenv.Context(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	l.listed = states
}

func (l *laggingList) List(context.Context) ([]runtime.State, error) { return l.listed, nil }

// A listing that shows a terminal instance's container running is checked
// against the container before anything is done: the chaos test saw a
// "bad" container (exit 3) fail its instance and the reconciler then stop
// the exited container, recording that it "was running while the instance
// is failed"; a stopped instance would likewise be recorded running again.
func TestTerminalInstancesCheckTheContainerFirst(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		rt := &laggingList{Runtime: r.rt}
		var insts []container.Instance
		var refs []runtime.Ref
		for range 2 {
			inst := r.running(r.creating(r.create("sleeper"), node), node)
			ref := r.start(inst)
			r.waitPhase(ref, runtime.PhaseRunning)
			insts, refs = append(insts, inst), append(refs, ref)
		}
		rt.snapshot(t)
		for _, ref := range refs {
			if err := r.rt.Stop(testenv.Context(t, time.Minute), ref, 0); err != nil {
				t.Fatal(err)
			}
		}
		failed := r.move(insts[0], fsm.Failed, nil)
		stopped := r.move(insts[1], fsm.Stopped, nil)
		r.advance(time.Hour) // past the orphan grace of the containers

		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.Runtimes = []runtime.Runtime{rt} }))
		if rep.TerminalStopped != 0 || rep.Started != 0 {
			t.Fatalf("report %+v: acted on a container listed running that had exited", rep)
		}
		if got := r.get(failed.ID); got.Version != failed.Version {
			t.Errorf("failed instance touched: %+v", got)
		}
		if got := r.get(stopped.ID); got.Status != fsm.Stopped || got.Version != stopped.Version {
			t.Errorf("stopped instance touched: %+v", got)
		}
		if evs := r.events(failed.ID); evs[len(evs)-1].Type == container.EventReconciled {
			t.Errorf("recorded %s for a container that had exited", container.EventReconciled)
		}
	})
}

// stopThenDelete is the real runtime under which a user asks to delete the
// instance while the reconciler stops its container: its Stop first runs
// meanwhile, then stops the container.
type stopThenDelete struct {
	*docker.Runtime
	meanwhile func()
}

func (s *stopThenDelete) Stop(ctx context.Context, ref runtime.Ref, grace time.Duration) error {
	s.meanwhile()
	return s.Runtime.Stop(ctx, ref, grace)
}

// A failed instance whose delete is requested while the reconciler stops
// its running container gets no ContainerReconciled "failed → failed"
// after its delete_pending: the chaos test on the emulated stack saw one
// appended after the delete's events (an FSM violation in the history),
// because the event was appended whatever the instance had become. It is
// recorded only on the version the pass listed.
func TestFailedInstanceDeletedWhileItsContainerIsStopped(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		inst := r.running(r.creating(r.create("sleeper"), node), node)
		ref := r.start(inst)
		r.waitPhase(ref, runtime.PhaseRunning)
		failed := r.move(inst, fsm.Failed, nil) // the container keeps running, as after a `docker start`
		rt := &stopThenDelete{Runtime: r.rt, meanwhile: func() { r.move(failed, fsm.DeletePending, nil) }}

		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.Runtimes = []runtime.Runtime{rt} }))
		if rep.TerminalStopped != 1 || rep.Errors != 0 {
			t.Fatalf("report %+v: want the failed instance's container stopped, without an error", rep)
		}
		wantStatus(t, r.get(failed.ID), fsm.DeletePending)
		evs := r.events(failed.ID)
		if f := eventcheck.Check(failed.ID, evs); len(f.Violations) > 0 {
			t.Errorf("history broken: %v", f.Violations)
		}
		for _, ev := range evs {
			if ev.Type == container.EventReconciled {
				t.Errorf("recorded %+v after the instance moved on", ev)
			}
		}
	})
}
