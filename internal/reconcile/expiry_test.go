package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
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

// TestReconcilerDeadlines: the same net for the other deadlines: a pass
// asks for the start of a restart past its restart_at (by berth, the
// instance running with its container ended), and for the delete of an
// ended instance past its delete_at (reason "retention reached"); a second
// pass finds nothing more to do. On both stores.
func TestReconcilerDeadlines(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		for _, tpl := range []container.Template{
			{Name: "flaky", Restart: &container.Restart{Policy: container.RestartOnFailure}},
			{Name: "kept", Retention: &container.Retention{Stopped: "1s"}},
		} {
			tpl.Runtime, tpl.Image, tpl.PullPolicy, tpl.Command = "docker", r.image, container.PullNever, []string{"sh", "-c", "sleep 3600"}
			if _, _, err := r.m.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true}, tpl); err != nil {
				t.Fatal(err)
			}
		}
		// Its exit answered with a restart (a field-only write: any change
		// of status clears restart_at).
		restarting := r.move(r.move(r.creating(r.create("flaky"), node), fsm.Running, nil), fsm.Running, func(i *container.Instance) {
			now, code := time.Now().UTC(), 3
			i.StartedAt, i.FinishedAt = &now, &now
			i.RestartAt, i.Restarts, i.LastExit = &now, 1, &code
		})
		stopped := r.move(r.creating(r.create("kept"), node), fsm.Stopped, nil)
		if stopped.DeleteAt == nil {
			t.Fatalf("stopped under a retention without delete_at: %+v", stopped)
		}
		time.Sleep(time.Until(*stopped.DeleteAt)) // a deadline: the pass must come after it

		if rep := r.run(r.reconciler()); rep.Expired != 1 || rep.RetentionDeleted != 1 {
			t.Fatalf("report %+v: want 1 expired (the restart), 1 retention deleted", rep)
		}
		wantStatus(t, r.get(restarting.ID), fsm.StartPending)
		evs := r.events(restarting.ID)
		if last := evs[len(evs)-1]; last.Type != container.EventStartRequested || last.Actor != container.ActorSystem {
			t.Fatalf("the restart's event %+v", last)
		}
		wantStatus(t, r.get(stopped.ID), fsm.DeletePending)
		evs = r.events(stopped.ID)
		if last := evs[len(evs)-1]; last.Message != container.ReasonRetentionReached || last.Type != container.EventDeleteRequested {
			t.Fatalf("the retention's event %+v", last)
		}
		if rep := r.run(r.reconciler()); rep.Expired != 0 || rep.RetentionDeleted != 0 {
			t.Fatalf("a second pass acted again: %+v", rep)
		}
	})
}
