package reconcile_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// unreachable wraps the real runtime; while down, its listing fails the
// way a Docker host that does not answer makes it fail.
type unreachable struct {
	runtime.Runtime
	down atomic.Bool
}

func (u *unreachable) List(ctx context.Context) ([]runtime.State, error) {
	if u.down.Load() {
		return nil, runtime.Errorf(runtime.ErrUnavailable, "list", "", node, "injected: connection refused")
	}
	return u.Runtime.List(ctx)
}

// TestStuckWaitsForItsRuntime: a stop accepted before its host went down,
// whose message was lost (dead-lettered by the outage), is neither
// re-enqueued nor failed by the stuck policy while the host does not answer,
// however long that lasts within unavailable_retry_for (before, it was
// failed after two re-enqueues); once the host answers it is re-enqueued and
// the worker stops the container. Past unavailable_retry_for the policy
// applies as usual.
func TestStuckWaitsForItsRuntime(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		timeouts := reconcile.TimeoutsFor(configDefaults())
		rt := &unreachable{Runtime: r.rt}
		rc := r.reconciler(func(o *reconcile.Options) {
			o.Runtimes = []runtime.Runtime{rt}
			o.UnavailableRetryFor = 10 * timeouts[fsm.Stopping]
		})

		inst := r.running(r.creating(r.create("sleeper"), node), node)
		ref := r.start(inst)
		r.waitPhase(ref, runtime.PhaseRunning)
		if _, err := r.m.Stop(ctx, alice, inst.ID, nil, "req-stop"); err != nil {
			t.Fatal(err)
		}
		r.dispatchAll(inst.ID)
		stopping := r.move(r.get(inst.ID), fsm.Stopping, nil) // claimed; its message then dead-lettered

		rt.down.Store(true)
		for round := 1; round <= 4; round++ {
			r.advance(time.Duration(round) * 2 * timeouts[fsm.Stopping])
			rep := r.run(rc)
			if rep.Requeued != 0 || rep.FailedStuck != 0 || rep.StuckRuntimeDown != 1 || !rep.ListPartial {
				t.Fatalf("round %d with the host down: %+v, want it left alone", round, rep)
			}
			if got := r.get(inst.ID); got.Status != fsm.Stopping || got.Version != stopping.Version {
				t.Fatalf("round %d: instance moved to %s (%s)", round, got.Status, got.StatusReason)
			}
		}

		rt.down.Store(false)
		if rep := r.run(rc); rep.Requeued != 1 || rep.FailedStuck != 0 {
			t.Fatalf("host back: %+v, want the stop re-enqueued", rep)
		}
		items := r.undispatched(inst.ID)
		if len(items) != 1 {
			t.Fatalf("re-enqueued items: %+v", items)
		}
		body, err := outbox.FromItem(items[0]).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if res := newWorker(t, r).Process(testenv.Context(t, time.Minute), queue.Delivery{MessageID: "redrive", Body: body, ReceiveCount: 1}); !res.Ack {
			t.Fatalf("worker on the redriven stop: %+v", res)
		}
		wantStatus(t, r.get(inst.ID), fsm.Stopped)
		if st, err := r.rt.Inspect(testenv.Context(t, 30*time.Second), ref); err != nil || st.Phase != runtime.PhaseExited {
			t.Fatalf("container after the redriven stop: %+v, %v", st, err)
		}

		// A host that never comes back: past unavailable_retry_for the
		// policy applies as usual.
		other := r.running(r.creating(r.create("sleeper"), node), node)
		if _, err := r.m.Stop(ctx, alice, other.ID, nil, "req-stop-2"); err != nil {
			t.Fatal(err)
		}
		r.dispatchAll(other.ID)
		rt.down.Store(true)
		r.advance(11 * timeouts[fsm.Stopping])
		if rep := r.run(rc); rep.Requeued != 1 || rep.StuckRuntimeDown != 0 {
			t.Fatalf("past unavailable_retry_for: %+v, want the stuck policy applied", rep)
		}
	})
}
