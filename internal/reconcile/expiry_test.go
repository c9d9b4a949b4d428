package reconcile_test

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// TestReconcilerExpires: the net behind the lifetimes' timers: a pass asks
// for the stop of an instance past its expires_at (reason "lifetime
// reached", by berth), leaves one whose expiry is still to come, and a
// second pass finds nothing more to do. On both stores.
func TestReconcilerExpires(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		lifetime := func(at time.Time) func(*container.Instance) {
			return func(i *container.Instance) {
				now := time.Now().UTC()
				i.RuntimeNodeName, i.StartedAt = node, &now
				i.ExpiresAt = &at
				i.Lifetime = &container.InstanceLifetime{OnExpiry: container.ExpiryStop, Default: "1m0s"}
			}
		}
		live := func(at time.Time) container.Instance {
			inst := r.move(r.creating(r.create("sleeper"), node), fsm.Running, lifetime(at))
			r.waitPhase(r.start(inst), runtime.PhaseRunning)
			return inst
		}
		due := live(time.Now().Add(-time.Second))
		later := live(time.Now().Add(time.Hour))

		if rep := r.run(r.reconciler()); rep.Expired != 1 {
			t.Fatalf("report %+v: want 1 expired", rep)
		}
		wantStatus(t, r.get(due.ID), fsm.StopPending)
		evs := r.events(due.ID)
		if last := evs[len(evs)-1]; last.Message != container.ReasonLifetimeReached || last.Actor != container.ActorSystem ||
			last.Type != container.EventStopRequested {
			t.Fatalf("the expiry's event %+v", last)
		}
		wantStatus(t, r.get(later.ID), fsm.Running)
		if rep := r.run(r.reconciler()); rep.Expired != 0 {
			t.Fatalf("a second pass expired %d, want 0", rep.Expired)
		}
	})
}
