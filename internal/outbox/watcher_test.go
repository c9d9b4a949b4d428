package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/outbox/outboxtest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// startWatcher runs a watcher whose sweep is an hour away, so whatever it
// dispatches within a test came from a notification (or its start pass).
func startWatcher(t *testing.T, st store.Store, queues map[outbox.QueueName]queue.Queue) (*outbox.Watcher, store.Store) {
	t.Helper()
	d := &outbox.Dispatcher{Queues: queues, Store: st}
	w := outbox.NewWatcher(d, outbox.WatcherOptions{SweepEvery: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, store.Hooked{Store: st, OnCommit: w.Committed}
}

func TestWatcherDispatchesOnNotify(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 100)
	_, nst := startWatcher(t, st, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq})

	// A create through the notifying store: the message is there without
	// waiting for the (hour-long) sweep.
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
	// Marked dispatched right after the send.
	deadline := time.Now().Add(5 * time.Second)
	for storetest.GetOutbox(t, st, p.Outbox.ID).State != container.OutboxDispatched {
		if time.Now().After(deadline) {
			t.Fatal("the item was not marked dispatched")
		}
		time.Sleep(5 * time.Millisecond)
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

// countingMarks counts MarkDispatched calls on the real store underneath.
type countingMarks struct {
	store.Store
	mu  sync.Mutex
	ids []string
}

func (c *countingMarks) MarkDispatched(ctx context.Context, id string, at time.Time) error {
	c.mu.Lock()
	c.ids = append(c.ids, id)
	c.mu.Unlock()
	return c.Store.MarkDispatched(ctx, id, at)
}

func (c *countingMarks) marked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// startMarkAfter runs a watcher with MarkAfter over st (counted) and an
// hour-long sweep.
func startMarkAfter(t *testing.T, st *countingMarks, markAfter time.Duration, queues map[outbox.QueueName]queue.Queue) store.Store {
	t.Helper()
	d := &outbox.Dispatcher{Queues: queues, Store: st}
	w := outbox.NewWatcher(d, outbox.WatcherOptions{SweepEvery: time.Hour, MarkAfter: markAfter})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return store.Hooked{Store: st, OnCommit: w.Committed}
}

// waitState waits until the item has the state.
func waitState(t *testing.T, st store.Store, id string, want container.OutboxState) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for storetest.GetOutbox(t, st, id).State != want {
		if time.Now().After(deadline) {
			t.Fatalf("outbox item %s is %s, want %s", id, storetest.GetOutbox(t, st, id).State, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatcherMarkAfter: with MarkAfter, an item the worker finished before
// it was due is never marked dispatched (no write of the watcher's), an
// item still pending is marked once it is due, and no held item is sent
// twice by the passes in between.
func TestWatcherMarkAfter(t *testing.T) {
	st := &countingMarks{Store: teststores.Bolt(t, nil)}
	cq, _ := memQueues(t, 100)
	nst := startMarkAfter(t, st, 300*time.Millisecond, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq})
	ctx := context.Background()

	first := storetest.CreateAt(time.Now())
	if _, err := nst.CreateInstance(ctx, first); err != nil {
		t.Fatal(err)
	}
	ds, err := cq.Receive(ctx, 1, 5*time.Second)
	if err != nil || len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != first.Outbox.ID {
		t.Fatalf("Receive: %v, %v", ds, err)
	}
	if err := st.MarkDone(ctx, first.Outbox.ID, time.Now()); err != nil { // the worker's work
		t.Fatal(err)
	}
	// A second item: its pass must not send the first again.
	second := storetest.CreateAt(time.Now())
	if _, err := nst.CreateInstance(ctx, second); err != nil {
		t.Fatal(err)
	}
	ds, err = cq.Receive(ctx, 10, 5*time.Second)
	if err != nil || len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != second.Outbox.ID {
		t.Fatalf("Receive after the second create: %d messages, %v", len(ds), err)
	}
	waitState(t, st, second.Outbox.ID, container.OutboxDispatched)
	if got := st.marked(); len(got) != 1 || got[0] != second.Outbox.ID {
		t.Errorf("MarkDispatched calls for %v, want only the unfinished %s", got, second.Outbox.ID)
	}
	if got := storetest.GetOutbox(t, st, first.Outbox.ID).State; got != container.OutboxDone {
		t.Errorf("finished item is %s, want done", got)
	}
	if extra := drain(t, cq); len(extra) != 0 {
		t.Errorf("%d messages sent again", len(extra))
	}
}

// TestWatcherMarkAfterBurst: more items than a page (100) held at once are
// all sent, each once: those past the first page once the marks are made.
func TestWatcherMarkAfterBurst(t *testing.T) {
	st := &countingMarks{Store: teststores.Bolt(t, nil)}
	cq, _ := memQueues(t, 1000)
	nst := startMarkAfter(t, st, 200*time.Millisecond, map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq})
	const n = 150
	ids := map[string]bool{}
	for range n {
		p := storetest.CreateAt(time.Now())
		if _, err := nst.CreateInstance(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		ids[p.Outbox.ID] = true
	}
	got := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ds, err := cq.Receive(context.Background(), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			id := outboxtest.Decode(t, d).OutboxID
			if got[id] || !ids[id] {
				t.Errorf("item %s sent twice or unknown", id)
			}
			got[id] = true
		}
	}
	if len(got) != n {
		t.Fatalf("%d of %d items sent", len(got), n)
	}
	for id := range ids {
		waitState(t, st, id, container.OutboxDispatched)
	}
}
