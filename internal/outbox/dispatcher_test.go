package outbox_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/outbox/outboxtest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

func TestDispatchRoutesBatchesAndMarks(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 1000)
	create, lifecycle := &recordingQueue{Queue: cq}, &recordingQueue{Queue: lq}
	var logs, emf testenv.SyncBuffer
	d := &outbox.Dispatcher{
		Queues:  map[outbox.QueueName]queue.Queue{outbox.CreateQueue: create, outbox.LifecycleQueue: lifecycle},
		Store:   st,
		Metrics: metrics.New(&emf, map[string]string{"Function": "test"}),
		Logger:  testLogger(&logs),
	}
	var items []container.OutboxItem
	for range 23 {
		items = append(items, storetest.CommitCreate(t, st, time.Now()))
	}
	for _, op := range []container.Op{container.OpStart, container.OpStop, container.OpDelete} {
		items = append(items, storetest.CommitRequest(t, st, op))
	}
	items = append(items, items[0]) // the same item twice: sent once

	if failed := d.Dispatch(context.Background(), items); failed != nil {
		t.Fatalf("Dispatch failed %v", failed)
	}
	if got := create.sizes(); !slices.Equal(got, []int{10, 10, 3}) {
		t.Errorf("create queue batches %v, want 10, 10, 3", got)
	}
	if got := lifecycle.sizes(); !slices.Equal(got, []int{3}) {
		t.Errorf("lifecycle queue batches %v, want one of 3", got)
	}

	byID := map[string]container.OutboxItem{}
	for _, it := range items {
		byID[it.ID] = it
	}
	check := func(q queue.Queue, want int, create bool) {
		t.Helper()
		ds := drain(t, q)
		if len(ds) != want {
			t.Fatalf("%d messages, want %d", len(ds), want)
		}
		for _, del := range ds {
			m := outboxtest.Decode(t, del)
			it, ok := byID[m.OutboxID]
			if !ok {
				t.Fatalf("message for unknown outbox item %s", m.OutboxID)
			}
			if want := outbox.FromItem(it); m.InstanceID != want.InstanceID || m.Op != want.Op ||
				m.InstanceVersion != want.InstanceVersion || m.RequestID != want.RequestID || !m.CommittedAt.Equal(want.CommittedAt) {
				t.Errorf("message %+v, want %+v", m, want)
			}
			if (m.Op == container.OpCreate) != create {
				t.Errorf("op %s on the wrong queue", m.Op)
			}
			a := del.Attributes
			if a[outbox.AttrOp] != string(it.Op) || a[outbox.AttrInstanceID] != it.InstanceID ||
				a[outbox.AttrRequestID] != it.RequestID || a[outbox.AttrOutboxID] != it.ID {
				t.Errorf("attributes %v of item %+v", a, it)
			}
		}
	}
	check(cq, 23, true)
	check(lq, 3, false)

	for id := range byID {
		if it := storetest.GetOutbox(t, st, id); it.State != container.OutboxDispatched || it.DispatchedAt == nil {
			t.Errorf("item %s: state %s, dispatched at %v after Dispatch", id, it.State, it.DispatchedAt)
		}
	}
	n := 0
	for _, l := range emf.JSONLines() {
		if _, ok := l[outbox.MetricDispatchLatency]; ok {
			n++
			if l["Queue"] != "create" && l["Queue"] != "lifecycle" {
				t.Errorf("DispatchLatency line without a Queue dimension: %v", l)
			}
		}
	}
	if n != 26 {
		t.Errorf("%d DispatchLatency lines, want one per item (26)", n)
	}
	for _, l := range logs.JSONLines() {
		if l["msg"] == "outbox item dispatched" && (l["outbox_id"] == nil || l["instance_id"] == nil || l["op"] == nil) {
			t.Errorf("log line without ids: %v", l)
		}
	}
}

func TestDispatchSkipsFinishedAndFailsInvalid(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 1000)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}, Store: st}
	ctx := context.Background()
	done := storetest.CommitCreate(t, st, time.Now())
	if err := st.MarkDone(ctx, done.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	done = storetest.GetOutbox(t, st, done.ID)
	gaveUp := storetest.CommitCreate(t, st, time.Now())
	if err := st.MarkFailed(ctx, gaveUp.ID, 5, "boom", time.Now()); err != nil {
		t.Fatal(err)
	}
	gaveUp = storetest.GetOutbox(t, st, gaveUp.ID)
	bad := container.OutboxItem{ID: container.NewID(), InstanceID: "i", Op: "reboot", State: container.OutboxPending}
	noInstance := container.OutboxItem{ID: container.NewID(), Op: container.OpStop, State: container.OutboxPending}
	badID := container.OutboxItem{ID: "has spaces", InstanceID: "i", Op: container.OpStop, State: container.OutboxPending}

	failed := d.Dispatch(ctx, []container.OutboxItem{done, gaveUp, bad, noInstance, badID})
	if len(failed) != 3 {
		t.Fatalf("failed %v, want the three invalid items", failed)
	}
	for _, id := range []string{bad.ID, noInstance.ID, badID.ID} {
		if !errors.Is(failed[id], outbox.ErrInvalidItem) {
			t.Errorf("item %s: %v, want ErrInvalidItem", id, failed[id])
		}
	}
	if ds := append(drain(t, cq), drain(t, lq)...); len(ds) != 0 {
		t.Errorf("%d messages sent for finished or invalid items", len(ds))
	}
}

func TestDispatchReportsSendFailures(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 3) // room for three
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq}, Store: st}
	var items []container.OutboxItem
	for range 5 {
		items = append(items, storetest.CommitCreate(t, st, time.Now()))
	}
	stop := storetest.CommitRequest(t, st, container.OpStop) // no lifecycle queue configured
	failed := d.Dispatch(context.Background(), append(items, stop))
	if len(failed) != 3 || !errors.Is(failed[stop.ID], outbox.ErrNoQueue) {
		t.Fatalf("failed %v, want two that did not fit and the stop (no queue)", failed)
	}
	for _, it := range items {
		got := storetest.GetOutbox(t, st, it.ID)
		if _, notSent := failed[it.ID]; notSent != (got.State == container.OutboxPending) {
			t.Errorf("item %s: failed %t, state %s", it.ID, notSent, got.State)
		}
	}
	if n := len(drain(t, cq)); n != 3 {
		t.Errorf("%d messages, want 3", n)
	}
}

// failingMarks makes MarkDispatched fail, as a store outage right after the
// send would.
type failingMarks struct{ store.Store }

func (failingMarks) MarkDispatched(context.Context, string, time.Time) error {
	return errors.New("store unavailable")
}

func TestMarkDispatchedFailureIsNotFatal(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 10)
	var logs testenv.SyncBuffer
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq}, Store: failingMarks{st}, Logger: testLogger(&logs)}
	it := storetest.CommitCreate(t, st, time.Now())
	if failed := d.Dispatch(context.Background(), []container.OutboxItem{it}); failed != nil {
		t.Fatalf("Dispatch: %v", failed)
	}
	if n := len(drain(t, cq)); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	warned := false
	for _, l := range logs.JSONLines() {
		warned = warned || (l["msg"] == "outbox item sent but not marked dispatched" && l["outbox_id"] == it.ID)
	}
	if !warned {
		t.Error("no warning logged for the failed MarkDispatched")
	}
	// It is still pending, so a sweep sends it again: a harmless duplicate.
	n, err := d.Sweep(context.Background(), -time.Minute)
	if n != 1 || err != nil {
		t.Errorf("Sweep: %d, %v; want the item sent again", n, err)
	}
}

func TestSweepDispatchesOnlyStaleItems(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, lq := memQueues(t, 1000)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq}, Store: st}
	ctx := context.Background()
	var stale []string
	for range 150 { // more than one ListUndispatched page
		stale = append(stale, storetest.CommitCreate(t, st, time.Now().Add(-time.Minute)).ID)
	}
	fresh := storetest.CommitCreate(t, st, time.Now())
	n, err := d.Sweep(ctx, 30*time.Second)
	if err != nil || n != len(stale) {
		t.Fatalf("Sweep: %d, %v; want %d stale items dispatched", n, err, len(stale))
	}
	for _, id := range stale {
		if it := storetest.GetOutbox(t, st, id); it.State != container.OutboxDispatched {
			t.Fatalf("stale item %s is %s after the sweep", id, it.State)
		}
	}
	if it := storetest.GetOutbox(t, st, fresh.ID); it.State != container.OutboxPending {
		t.Errorf("a fresh item was swept (%s)", it.State)
	}
	if got := len(drain(t, cq)); got != len(stale) {
		t.Errorf("%d messages, want %d", got, len(stale))
	}
	if n, err := d.Sweep(ctx, 30*time.Second); n != 0 || err != nil {
		t.Errorf("second Sweep: %d, %v; want nothing left", n, err)
	}
}

func TestSweepReportsFailures(t *testing.T) {
	st := teststores.Bolt(t, nil)
	cq, _ := memQueues(t, 2)
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq}, Store: st}
	for range 4 {
		storetest.CommitCreate(t, st, time.Now().Add(-time.Minute))
	}
	n, err := d.Sweep(context.Background(), time.Second)
	if n != 2 || err == nil {
		t.Fatalf("Sweep into a queue with room for 2: %d, %v; want 2 and an error", n, err)
	}
	left, _ := st.ListUndispatched(context.Background(), time.Now(), 10)
	if len(left) != 2 {
		t.Errorf("%d items still pending, want 2", len(left))
	}
}

// TestSweepMeasuresOldestPending: each Sweep reports the age of the oldest
// item still pending (the alarm's metric on AWS), on both stores.
func TestSweepMeasuresOldestPending(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		now := time.Now().Truncate(time.Second)
		st := b.Open(t, time.Now)
		cq, lq := memQueues(t, 100)
		var buf testenv.SyncBuffer
		d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq},
			Store: st, Metrics: metrics.New(&buf, nil), Clock: func() time.Time { return now }}
		ctx := context.Background()
		ages := func() []float64 {
			var out []float64
			for _, l := range buf.JSONLines() {
				if v, ok := l[outbox.MetricOldestPendingAge].(float64); ok {
					out = append(out, v)
				}
			}
			return out
		}
		if _, err := d.Sweep(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		storetest.CommitCreate(t, st, now.Add(-2*time.Minute))
		storetest.CommitCreate(t, st, now.Add(-10*time.Second))
		if _, err := d.Sweep(ctx, 30*time.Second); err != nil { // sends the 2-minute-old item
			t.Fatal(err)
		}
		if _, err := d.Sweep(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := ages(); len(got) != 3 || got[0] != 0 || got[1] != 120 || got[2] != 10 {
			t.Errorf("oldest pending ages %v, want [0 120 10]", got)
		}
	})
}
