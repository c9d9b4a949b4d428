package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/outbox/outboxtest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/startstop"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// startWatcher runs a watcher whose sweep is an hour away, so whatever it
// dispatches within a test came from a notification (or its start pass).
// startWatcher runs a watcher as a service, returned once its first pass
// (the one at start) is done, and the store that notifies it.
func startWatcher(t *testing.T, st store.Store, queues map[outbox.QueueName]queue.Queue) (*startstop.Loop, store.Store) {
	t.Helper()
	d := &outbox.Dispatcher{Queues: queues, Store: st}
	w := outbox.NewWatcher(d, outbox.WatcherOptions{SweepEvery: time.Hour})
	svc := w.Service()
	first := svc.NextPass()
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	waitPass(t, first)
	return svc, store.Hooked{Store: st, OnCommit: w.Committed}
}

// waitPass waits for a watcher pass's signal; the bound only guards
// against a hang.
func waitPass(t *testing.T, pass <-chan struct{}) {
	t.Helper()
	select {
	case <-pass:
	case <-time.After(10 * time.Second):
		t.Fatal("no watcher pass within 10 s")
	}
}

func TestWatcherDispatchesOnNotify(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 100)
	svc, nst := startWatcher(t, st, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq})

	// A create through the notifying store: the message is there without
	// waiting for the (hour-long) sweep, and the pass it caused (the only
	// one: nothing else wakes the watcher) marks it dispatched.
	pass := svc.NextPass()
	p := storetest.CreateAt(time.Now())
	if _, err := nst.CreateInstance(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	ds, err := cq.Receive(context.Background(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive after a notified create: %d messages, %v", len(ds), err)
	}
	if m := outboxtest.Decode(t, ds[0]); m.OutboxID != p.Outbox.ID {
		t.Errorf("message for %s, want %s", m.OutboxID, p.Outbox.ID)
	}
	waitPass(t, pass)
	if got := storetest.GetOutbox(t, st, p.Outbox.ID).State; got != container.OutboxDispatched {
		t.Fatalf("after the pass the item is %s, want dispatched", got)
	}

	// A transition carrying an outbox item notifies too.
	stop := storetest.CommitRequest(t, nst, container.OpStop)
	ds, err = lq.Receive(context.Background(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != stop.ID {
		t.Fatalf("Receive after a notified stop: %v, %v", ds, err)
	}
}

func TestWatcherCoalescesBursts(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 1000)
	_, nst := startWatcher(t, st, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq})
	const n = 40
	for range n {
		if _, err := nst.CreateInstance(context.Background(), storetest.CreateAt(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ds, err := cq.Receive(context.Background(), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			id := outboxtest.Decode(t, d).OutboxID
			if got[id] {
				t.Errorf("item %s dispatched twice by one watcher", id)
			}
			got[id] = true
		}
	}
	if len(got) != n {
		t.Fatalf("%d of %d items dispatched", len(got), n)
	}
}

func TestWatcherDispatchesLeftoversAtStart(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 100)
	old := storetest.CommitCreate(t, st, time.Now().Add(-time.Hour)) // pending from before a restart
	startWatcher(t, st, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq})
	ds, err := cq.Receive(context.Background(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != old.ID {
		t.Fatalf("Receive after start: %v, %v", ds, err)
	}
}

func TestWatcherSweepCatchesMissedNotifications(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 100)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq}, Store: st}
	w := outbox.NewWatcher(d, outbox.WatcherOptions{SweepEvery: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	it := storetest.CommitCreate(t, st, time.Now()) // written without a notification
	ds, err := cq.Receive(context.Background(), 1, 5*time.Second)
	if err != nil || len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != it.ID {
		t.Fatalf("Receive: %v, %v", ds, err)
	}
}

// TestLatencyInProcess measures commit → message received on the local
// path (bolt store, watcher notified by the store wrapper, memqueue with a
// waiting receiver) and logs the median; nothing is asserted on it.
func TestLatencyInProcess(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 1000)
	_, nst := startWatcher(t, st, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq})
	const n = 100
	var fromCommit, fromCreatedAt []time.Duration
	for range n {
		p := storetest.CreateAt(time.Now())
		if _, err := nst.CreateInstance(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		ds, err := cq.Receive(context.Background(), 1, 5*time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("Receive: %d, %v", len(ds), err)
		}
		got := time.Now()
		fromCommit = append(fromCommit, got.Sub(committed))
		fromCreatedAt = append(fromCreatedAt, got.Sub(p.Outbox.CreatedAt))
		_ = cq.Ack(context.Background(), ds[0])
	}
	t.Logf("in-process dispatch latency over %d creates: median %s from CreateInstance's return (commit), %s from the item's CreatedAt (before the bolt fsync)",
		n, testenv.Median(fromCommit), testenv.Median(fromCreatedAt))
}
