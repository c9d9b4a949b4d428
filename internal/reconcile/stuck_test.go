package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/worker"
)

// Stuck transient statuses: an instance whose work was dispatched and lost
// is re-enqueued (a fresh pending outbox item the real worker then carries
// out), at most MaxRequeues times per status, then failed with the reason;
// an instance whose item is still undispatched is left to the sweeper.
func TestStuckStatuses(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		timeouts := reconcile.TimeoutsFor(configDefaults())
		stopTO := timeouts[fsm.StopPending]

		// stop_pending whose stop message was dispatched and lost.
		stop := r.running(r.creating(r.create("sleeper"), node), node)
		stopRef := r.start(stop)
		r.waitPhase(stopRef, runtime.PhaseRunning)
		if _, err := r.m.Stop(context.Background(), alice, stop.ID, nil, "req-stop"); err != nil {
			t.Fatal(err)
		}
		r.dispatchAll(stop.ID)
		// pending whose create item was never dispatched: the sweeper's.
		pending := r.create("sleeper")
		// creating, claimed by a worker that died before making anything.
		creating := r.creating(r.create("sleeper"), node)
		r.dispatchAll(creating.ID)

		r.advance(stopTO - time.Minute)
		if rep := r.run(r.reconciler()); rep.Requeued != 0 || rep.FailedStuck != 0 {
			t.Fatalf("acted before the timeout: %+v", rep)
		}

		r.advance(timeouts[fsm.Pending] + time.Minute) // past every timeout
		rep := r.run(r.reconciler())
		if rep.Requeued != 2 || rep.StuckLeftToSweeper != 1 || rep.FailedStuck != 0 {
			t.Fatalf("report %+v: want 2 requeued (stop, create), 1 left to the sweeper", rep)
		}
		if got := r.get(pending.ID); got.Status != fsm.Pending || got.Version != pending.Version {
			t.Errorf("the sweeper's pending instance was touched: %+v", got)
		}
		got := r.get(stop.ID)
		wantStatus(t, got, fsm.StopPending)
		if !strings.HasPrefix(got.StatusReason, reconcile.RequeueMarker+"stop: stop_pending for ") {
			t.Errorf("status_reason %q", got.StatusReason)
		}
		items := r.undispatched(stop.ID)
		if len(items) != 1 || items[0].Op != container.OpStop || items[0].InstanceVersion != got.Version {
			t.Fatalf("re-enqueued items %+v, want one stop at version %d", items, got.Version)
		}
		if items := r.undispatched(creating.ID); len(items) != 1 || items[0].Op != container.OpCreate {
			t.Fatalf("creating: re-enqueued items %+v, want one create", items)
		}

		// The normal pipeline carries the re-enqueued stop out: the real
		// worker, given the item as the dispatcher would send it.
		w := newWorker(t, r)
		body, err := outbox.FromItem(items[0]).Encode()
		if err != nil {
			t.Fatal(err)
		}
		res := w.Process(testenv.Context(t, time.Minute), queue.Delivery{MessageID: "m1", Body: body, ReceiveCount: 1, SentAt: time.Now()})
		if !res.Ack {
			t.Fatalf("worker on the re-enqueued stop: %+v", res)
		}
		wantStatus(t, r.get(stop.ID), fsm.Stopped)

		// The creating instance: re-enqueued again once its item was
		// dispatched (and lost) again, then failed after MaxRequeues (2).
		r.dispatchAll(creating.ID)
		r.advance(2 * timeouts[fsm.Pending])
		if rep := r.run(r.reconciler()); rep.Requeued != 1 {
			t.Fatalf("second round: %+v, want the create re-enqueued again", rep)
		}
		r.dispatchAll(creating.ID)
		r.advance(3 * timeouts[fsm.Pending])
		if rep := r.run(r.reconciler()); rep.FailedStuck != 1 || rep.Requeued != 0 {
			t.Fatalf("third round: %+v, want the creating instance failed", rep)
		}
		got = r.get(creating.ID)
		wantStatus(t, got, fsm.Failed)
		if !strings.HasPrefix(got.StatusReason, "creating made no progress for ") ||
			!strings.HasSuffix(got.StatusReason, "after 2 re-enqueue(s) by the reconciler") || got.FinishedAt == nil {
			t.Errorf("failed with reason %q", got.StatusReason)
		}
		if n, _ := r.store.AdmissionCount(context.Background()); n != 1 {
			t.Errorf("admission count %d after the creating instance failed, want 1 (the pending one)", n)
		}
		noRejections(t, r, stop.ID, creating.ID)
	})
}

// MaxRequeues < 0: a stuck instance fails at once.
func TestStuckFailsAtOnceWithoutRequeues(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		inst := r.creating(r.create("sleeper"), node)
		r.dispatchAll(inst.ID)
		r.advance(time.Hour)
		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.MaxRequeues = -1 }))
		if rep.FailedStuck != 1 || rep.Requeued != 0 {
			t.Fatalf("report %+v", rep)
		}
		got := r.get(inst.ID)
		wantStatus(t, got, fsm.Failed)
		if !strings.HasPrefix(got.StatusReason, "creating made no progress for 1h") {
			t.Errorf("reason %q", got.StatusReason)
		}
	})
}

func newWorker(t *testing.T, r *rig) *worker.Worker {
	t.Helper()
	res, err := runtime.NewResolver(r.rt)
	if err != nil {
		t.Fatal(err)
	}
	return worker.New(worker.Options{Manager: r.m, Store: r.store, Runtimes: res, StopGrace: time.Second, StablePoll: 20 * time.Millisecond,
		CreateStartTimeout: 30 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
}

// An instance of a runtime kind this reconciler has no runtime for is not
// compared with any runtime, but the stuck policy still applies to it.
func TestStuckPolicyWithoutItsRuntime(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		now := time.Now().UTC()
		id := container.NewID()
		inst, err := r.store.CreateInstance(context.Background(), store.CreateParams{
			Instance: container.Instance{ID: id, Owner: "alice", Template: "pod", Runtime: container.RuntimeKubernetes,
				Status: fsm.Pending, Version: 1, CreatedAt: now, UpdatedAt: now,
				Spec: container.Spec{Runtime: container.RuntimeKubernetes, Image: "img"}},
			Outbox: container.OutboxItem{ID: container.NewID(), InstanceID: id, Op: container.OpCreate, InstanceVersion: 1,
				State: container.OutboxPending, CreatedAt: now, UpdatedAt: now},
			Event: container.Event{InstanceID: id, Type: container.EventCreateRequested, To: fsm.Pending, At: now, Actor: "alice"},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.dispatchAll(inst.ID)
		r.advance(24 * time.Hour)
		rep := r.run(r.reconciler())
		if rep.Skipped != 1 || rep.Requeued != 1 {
			t.Fatalf("report %+v: want 1 skipped (no kubernetes runtime) and 1 requeued", rep)
		}
		if items := r.undispatched(inst.ID); len(items) != 1 || items[0].Op != container.OpCreate {
			t.Errorf("re-enqueued items %+v", items)
		}
	})
}
