package reconcile_test

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestReconcilePaused, on both stores with the real engine: a paused
// container is never taken for an exited or missing one (a paused instance
// whose container is paused stays paused over passes, long past every
// grace: not failed, restarted or expired into another status); a running
// instance whose container was paused (a pause whose worker has not
// recorded it, or one made outside berth) is recorded paused, and a paused
// one whose container runs again is recorded running, each by berth with
// no rejected transition.
func TestReconcilePaused(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		ctx := testenv.Context(t, 2*time.Minute)
		inst := r.running(r.creating(r.create("sleeper"), node), node)
		ref := r.start(inst)
		r.waitPhase(ref, runtime.PhaseRunning)
		if err := r.rt.Pause(ctx, ref); err != nil {
			t.Fatal(err)
		}
		rc := r.reconciler()
		if rep := r.run(rc); rep.Frozen != 1 {
			t.Errorf("pass over a running instance with a paused container: %+v, want one frozen", rep)
		}
		wantStatus(t, r.get(inst.ID), fsm.Paused)

		r.advance(time.Hour) // past every grace and stuck timeout
		for range 2 {
			if rep := r.run(rc); rep.Actions() != 0 {
				t.Errorf("pass over a paused instance and container: %+v, want no action", rep)
			}
		}
		wantStatus(t, r.get(inst.ID), fsm.Paused)

		if err := r.rt.Resume(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if rep := r.run(rc); rep.Frozen != 1 {
			t.Errorf("pass over a paused instance with a running container: %+v, want one frozen", rep)
		}
		wantStatus(t, r.get(inst.ID), fsm.Running)
		noRejections(t, r, inst.ID)
		evs := r.events(inst.ID)
		if n := len(evs); n < 2 || evs[n-2].Type != "ContainerPaused" || evs[n-1].Type != "ContainerResumed" {
			t.Errorf("history ends %+v, want ContainerPaused then ContainerResumed", evs[max(0, n-2):])
		}
	})
}
