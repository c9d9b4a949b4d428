package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/outbox/outboxtest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
)

// sweepAll sends every pending item the dispatcher's store lists.
func sweepAll(t *testing.T, d *outbox.Dispatcher) int {
	t.Helper()
	n, err := d.Sweep(context.Background(), -time.Minute)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return n
}

// received are the outbox ids of the messages visible on q now.
func received(t *testing.T, q queue.Queue) []string {
	t.Helper()
	var ids []string
	for _, d := range drain(t, q) {
		ids = append(ids, outboxtest.Decode(t, d).OutboxID)
	}
	return ids
}

// TestHandoverSendsOnceAndWritesNothing: items handed over are sent once
// and stay pending in the store (no dispatch mark written); a claim
// carrying the mark and a finished item leave the memory; a restart (a
// new Handover over the same store) sends again exactly what no claim
// marked and no worker finished.
func TestHandoverSendsOnceAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 100)
	queues := map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}
	h := outbox.NewHandover(st)
	d := &outbox.Dispatcher{Queues: queues, Store: h}

	var items []container.OutboxItem
	for range 3 {
		items = append(items, storetest.CommitCreate(t, st, time.Now()))
	}
	if n := sweepAll(t, d); n != 3 {
		t.Fatalf("first sweep sent %d; want 3", n)
	}
	if got := received(t, cq); len(got) != 3 {
		t.Fatalf("create queue holds %v; want the 3 items", got)
	}
	for _, it := range items {
		if got := storetest.GetOutbox(t, st, it.ID); got.State != container.OutboxPending || got.DispatchedAt != nil {
			t.Errorf("item %s after the hand-over: %s, dispatched at %v; want it pending, no mark written", it.ID, got.State, got.DispatchedAt)
		}
	}
	if n := sweepAll(t, d); n != 0 {
		t.Fatalf("second sweep sent %d; want 0 (all handed over)", n)
	}
	if got := received(t, cq); len(got) != 0 {
		t.Fatalf("second sweep sent %v again", got)
	}
	pending, err := h.ListUndispatched(ctx, time.Now().Add(time.Minute), 100)
	if err != nil || len(pending) != 0 {
		t.Fatalf("Handover.ListUndispatched = %d items, %v; want none (all handed over)", len(pending), err)
	}

	// The worker of item 0 claims with the mark; item 1's finishes.
	inst, err := st.GetInstance(ctx, items[0].InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Pending,
		To: fsm.Creating, DispatchOutboxID: items[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkDone(ctx, items[1].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := sweepAll(t, d); n != 0 {
		t.Fatalf("sweep after the claim sent %d; want 0", n)
	}
	if n := outbox.Remembered(h); n != 1 {
		t.Errorf("memory holds %d items after a complete listing; want 1 (only item 2 is still pending)", n)
	}

	// A restart: nothing in memory; the one item no claim marked and no
	// worker finished is sent again, the others not.
	d2 := &outbox.Dispatcher{Queues: queues, Store: outbox.NewHandover(st)}
	if n := sweepAll(t, d2); n != 1 {
		t.Fatalf("sweep after a restart sent %d; want 1", n)
	}
	if got := received(t, cq); len(got) != 1 || got[0] != items[2].ID {
		t.Fatalf("after a restart the queue holds %v; want [%s]", got, items[2].ID)
	}
}

// TestHandoverSendsARedeliveryAgain: an item handed over, finished and
// made pending again under its id (a webhook redelivery) before any
// listing could notice that it had finished is sent again, because the
// redelivery's commit makes the memory forget it.
func TestHandoverSendsARedeliveryAgain(t *testing.T) {
	ctx := context.Background()
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 100)
	h := outbox.NewHandover(st)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}, Store: h}
	hooked := store.Hooked{Store: st, OnCommit: h.Committed}

	it := storetest.CommitCreate(t, st, time.Now())
	if n := sweepAll(t, d); n != 1 {
		t.Fatalf("sweep sent %d; want 1", n)
	}
	if err := st.MarkDone(ctx, it.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	ob, err := hooked.RedeliverOutbox(ctx, it.ID, time.Now())
	if err != nil || ob.State != container.OutboxPending {
		t.Fatalf("RedeliverOutbox = %+v, %v", ob, err)
	}
	if n := sweepAll(t, d); n != 1 {
		t.Fatalf("sweep after the redelivery sent %d; want 1", n)
	}
	if got := received(t, cq); len(got) != 2 || got[1] != it.ID {
		t.Fatalf("queue holds %v; want the item twice", got)
	}
}

// TestHandoverPagesPastWhatItSent: with more items handed over than a
// sweep's page, a later item is still found and sent once.
func TestHandoverPagesPastWhatItSent(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 1000)
	h := outbox.NewHandover(st)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}, Store: h}
	at := time.Now().Add(-time.Hour)
	for i := range 250 {
		storetest.CommitCreate(t, st, at.Add(time.Duration(i)*time.Millisecond))
	}
	if n := sweepAll(t, d); n != 250 {
		t.Fatalf("first sweep sent %d; want 250", n)
	}
	late := storetest.CommitCreate(t, st, time.Now())
	if n := sweepAll(t, d); n != 1 {
		t.Fatalf("sweep behind 250 items handed over sent %d; want 1", n)
	}
	got := received(t, cq)
	if len(got) != 251 || got[250] != late.ID {
		t.Fatalf("queue holds %d messages, last %v; want 251, the last %s", len(got), got[len(got)-1:], late.ID)
	}
}

// TestHandoverMarksDeliveriesInTheStore: an item no worker claims (a
// webhook delivery) is marked dispatched in the store as before, so that
// listings do not read it again while it waits for its retries; the
// create beside it is only remembered. Redelivered, the delivery is
// pending again and sent again.
func TestHandoverMarksDeliveriesInTheStore(t *testing.T) {
	ctx := context.Background()
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 100)
	h := outbox.NewHandover(st)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}, Store: h}

	create := storetest.CommitCreate(t, st, time.Now())
	inst, err := st.GetInstance(ctx, create.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	delivery := container.OutboxItem{ID: container.NewID(), Op: container.OpDeliver,
		Delivery: &container.Delivery{WebhookID: "wh-a", From: inst.Status, To: inst.Status}}
	if _, err := st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
		To: inst.Status, Deliveries: []container.OutboxItem{delivery}}); err != nil {
		t.Fatal(err)
	}
	if n := sweepAll(t, d); n != 2 {
		t.Fatalf("sweep sent %d; want 2", n)
	}
	if got := storetest.GetOutbox(t, st, delivery.ID); got.State != container.OutboxDispatched {
		t.Errorf("delivery after the hand-over: %s; want dispatched in the store", got.State)
	}
	if got := storetest.GetOutbox(t, st, create.ID); got.State != container.OutboxPending {
		t.Errorf("create after the hand-over: %s; want pending (the claim marks it)", got.State)
	}
	if n := sweepAll(t, d); n != 0 {
		t.Fatalf("second sweep sent %d; want 0", n)
	}
	if err := st.MarkDone(ctx, delivery.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RedeliverOutbox(ctx, delivery.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := sweepAll(t, d); n != 1 {
		t.Fatalf("sweep after the redelivery sent %d; want 1", n)
	}
	if got := received(t, lq); len(got) != 2 || got[0] != delivery.ID || got[1] != delivery.ID {
		t.Fatalf("lifecycle queue holds %v; want the delivery twice", got)
	}
}
