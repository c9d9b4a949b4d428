package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
)

// Message attributes every dispatched message carries, so that a queue's
// consumer (or a person looking at a DLQ) can tell what it is without
// decoding the body. Empty values are left out.
const (
	AttrOp         = "op"
	AttrInstanceID = "instance_id"
	AttrRequestID  = "request_id"
	AttrOutboxID   = "outbox_id"
	// AttrOwner is the instance's owner: `berth serve`'s create queue
	// takes creates round-robin across its values (memqueue FairBy).
	AttrOwner = "owner"
)

// Metric names.
const (
	// MetricDispatchLatency is the time from the outbox item's commit
	// (CreatedAt) to its message being accepted by the queue, per item.
	MetricDispatchLatency = "DispatchLatency"
	// MetricDispatchFailures counts items whose send failed (they stay
	// pending and are retried: by the stream, the watcher or the sweep).
	MetricDispatchFailures = "DispatchFailures"
	// MetricOldestPendingAge is the age in seconds of the oldest outbox item
	// not yet dispatched (0 when there is none), measured by each Sweep:
	// on AWS, what the stack's "outbox not draining" alarm watches.
	MetricOldestPendingAge = "OutboxOldestPendingAge"
)

// ErrInvalidItem is the failure of an item that can never be dispatched: no
// id, no instance, an unknown op.
var ErrInvalidItem = errors.New("outbox: invalid item")

// ErrNoQueue is the failure of an item whose queue the dispatcher lacks.
var ErrNoQueue = errors.New("outbox: no queue configured")

// DefaultConcurrency is how many batches a Dispatch sends at once.
const DefaultConcurrency = 4

// Dispatcher turns outbox items into queue messages: creates to the create
// queue, the other operations to the lifecycle queue, in batches of up to
// queue.MaxBatch, and marks each sent item dispatched through its Store
// (the local server's Handover only remembers the hand-over: there the
// worker's claim writes the mark).
//
// Delivery is at least once, end to end: an item may be sent twice (a
// stream batch retried after a partial failure, the sweep racing the stream
// or the watcher, a MarkDispatched that failed after the send). That is
// harmless: the worker drops a message whose outbox item is already done or
// whose instance moved on, and every runtime action is keyed by the
// instance id, so a repeat adopts what the first did.
//
// The zero value of every field but Queues and Store is usable. A
// Dispatcher is safe for concurrent use.
type Dispatcher struct {
	Queues map[QueueName]queue.Queue
	Store  store.OutboxStore
	// Metrics receives DispatchLatency and DispatchFailures (dimension
	// Queue); nil discards them.
	Metrics *metrics.Emitter
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock defaults to time.Now.
	Clock func() time.Time
	// Concurrency bounds the batches sent at once; 0 means
	// DefaultConcurrency.
	Concurrency int
}

func (d *Dispatcher) now() time.Time {
	if d.Clock != nil {
		return d.Clock()
	}
	return time.Now()
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// Dispatch sends the items and marks each sent one dispatched. It returns
// the items that were not sent, by outbox id, with the reason; every other
// item was sent or skipped. Items already done or failed are skipped (a
// pending or dispatched item is sent: a dispatched one only reaches here
// when someone asks for a re-send). An item given twice is sent once.
//
// A failure of MarkDispatched after a successful send is logged, not
// returned: the message is on its queue, and if the item is swept again
// later the duplicate is dropped by the worker.
func (d *Dispatcher) Dispatch(ctx context.Context, items []container.OutboxItem) (failed map[string]error) {
	_, failed = d.dispatch(ctx, items)
	return failed
}

type batch struct {
	name  QueueName
	q     queue.Queue
	items []container.OutboxItem
}

// dispatch is Dispatch that also returns the ids of the items sent.
func (d *Dispatcher) dispatch(ctx context.Context, items []container.OutboxItem) (sent []string, failed map[string]error) {
	failed = map[string]error{}
	groups := map[QueueName][]container.OutboxItem{}
	var order []QueueName
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if seen[it.ID] {
			continue
		}
		seen[it.ID] = true
		if it.State == container.OutboxDone || it.State == container.OutboxFailed {
			d.log().DebugContext(ctx, "outbox item already finished; not dispatched", itemAttrs(it, "state", it.State)...)
			continue
		}
		if err := Validate(it); err != nil {
			failed[it.ID] = err
			d.log().ErrorContext(ctx, "outbox item cannot be dispatched", itemAttrs(it, "error", err)...)
			continue
		}
		name := QueueFor(it.Op)
		if name == NotifyQueue && d.Queues[name] == nil {
			name = LifecycleQueue
		}
		if d.Queues[name] == nil {
			failed[it.ID] = fmt.Errorf("%w: %s (outbox item %s)", ErrNoQueue, name, it.ID)
			continue
		}
		if _, ok := groups[name]; !ok {
			order = append(order, name)
		}
		groups[name] = append(groups[name], it)
	}
	var batches []batch
	for _, name := range order {
		its := groups[name]
		for len(its) > 0 {
			n := min(len(its), queue.MaxBatch)
			batches = append(batches, batch{name: name, q: d.Queues[name], items: its[:n]})
			its = its[n:]
		}
	}

	var mu sync.Mutex
	record := func(ok []string, bad map[string]error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, ok...)
		for id, err := range bad {
			failed[id] = err
		}
	}
	limit := d.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	if len(batches) <= 1 || limit == 1 {
		for _, b := range batches {
			record(d.sendBatch(ctx, b))
		}
	} else {
		sem := make(chan struct{}, limit)
		var wg sync.WaitGroup
		for _, b := range batches {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				record(d.sendBatch(ctx, b))
			}()
		}
		wg.Wait()
	}
	if len(failed) > 0 {
		d.Metrics.Count(MetricDispatchFailures, float64(len(failed)))
	}
	if len(failed) == 0 {
		failed = nil
	}
	return sent, failed
}

// Validate reports whether it can be sent: an id usable as a batch entry
// id, an instance id and a known op. ErrInvalidItem wraps every refusal.
func Validate(it container.OutboxItem) error {
	switch {
	case it.ID == "":
		return fmt.Errorf("%w: no id", ErrInvalidItem)
	case !validEntryID(it.ID):
		return fmt.Errorf("%w: id %q is not a valid batch entry id", ErrInvalidItem, it.ID)
	case it.InstanceID == "":
		return fmt.Errorf("%w %s: no instance_id", ErrInvalidItem, it.ID)
	case !it.Op.Valid():
		return fmt.Errorf("%w %s: unknown op %q", ErrInvalidItem, it.ID, it.Op)
	}
	return nil
}

// validEntryID: SQS batch entry ids are 1–80 letters, digits, '-' or '_'.
// Outbox ids are ULIDs, so this only rejects corrupt items.
func validEntryID(id string) bool {
	if len(id) == 0 || len(id) > 80 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// sendBatch sends one batch and marks what was sent.
func (d *Dispatcher) sendBatch(ctx context.Context, b batch) (sent []string, failed map[string]error) {
	failed = map[string]error{}
	msgs := make([]queue.Outgoing, 0, len(b.items))
	byID := make(map[string]container.OutboxItem, len(b.items))
	for _, it := range b.items {
		out, err := FromItem(it).Outgoing(it.ID, 0)
		if err != nil {
			failed[it.ID] = err
			continue
		}
		byID[it.ID] = it
		msgs = append(msgs, out)
	}
	if len(msgs) == 0 {
		return nil, failed
	}
	err := b.q.Send(ctx, msgs)
	var be *queue.BatchError
	switch {
	case err == nil:
	case errors.As(err, &be):
		for id, e := range be.Failed {
			failed[id] = fmt.Errorf("send to the %s queue: %w", b.name, e)
		}
	default:
		for id := range byID {
			failed[id] = fmt.Errorf("send to the %s queue: %w", b.name, err)
		}
	}
	now := d.now()
	for _, m := range msgs {
		it := byID[m.ID]
		if e := failed[m.ID]; e != nil {
			d.log().WarnContext(ctx, "outbox item not dispatched; it stays pending", itemAttrs(it, "queue", b.name, "error", e)...)
			continue
		}
		sent = append(sent, it.ID)
		latency := now.Sub(it.CreatedAt)
		d.Metrics.Duration(MetricDispatchLatency, latency, "Queue", string(b.name))
		d.log().InfoContext(ctx, "outbox item dispatched", itemAttrs(it, "queue", b.name, "latency_ms", float64(latency.Microseconds())/1000)...)
		if err := d.Store.MarkDispatched(ctx, it.ID, now); err != nil {
			// Sent is sent: a later sweep may send it again, which the worker
			// drops as a duplicate.
			d.log().WarnContext(ctx, "outbox item sent but not marked dispatched", itemAttrs(it, "queue", b.name, "error", err)...)
		}
	}
	return sent, failed
}

func itemAttrs(it container.OutboxItem, kv ...any) []any {
	out := []any{"outbox_id", it.ID, "instance_id", it.InstanceID, "op", it.Op}
	if it.RequestID != "" {
		out = append(out, "request_id", it.RequestID)
	}
	return append(out, kv...)
}

// DefaultSweepLimit bounds the items one Sweep dispatches.
const DefaultSweepLimit = 1000

// sweepPage is the ListUndispatched page size of a sweep.
const sweepPage = 100

// Sweep dispatches the items still pending olderThan after their creation
// (the reconciler's safety net for a stream record that was lost or gave
// up, and the local watcher's periodic pass). It returns how many it sent;
// err reports the items it could not send (they stay pending for the next
// sweep) or a store failure. It stops after DefaultSweepLimit items.
func (d *Dispatcher) Sweep(ctx context.Context, olderThan time.Duration) (n int, err error) {
	d.measureOldest(ctx)
	return d.sweep(ctx, d.now().Add(-olderThan), DefaultSweepLimit)
}

// measureOldest emits MetricOldestPendingAge. A store failure is only
// logged: the sweep that follows meets it too and reports it.
func (d *Dispatcher) measureOldest(ctx context.Context) {
	if d.Metrics == nil {
		return
	}
	now := d.now()
	items, err := d.Store.ListUndispatched(ctx, now, 1)
	if err != nil {
		d.log().WarnContext(ctx, "outbox: measuring the oldest pending item", "error", err)
		return
	}
	age := 0.0
	if len(items) > 0 {
		age = max(now.Sub(items[0].CreatedAt).Seconds(), 0)
	}
	d.Metrics.Emit(MetricOldestPendingAge, age, metrics.Seconds)
}

func (d *Dispatcher) sweep(ctx context.Context, createdBefore time.Time, limit int) (n int, err error) {
	tried := map[string]bool{}
	var failures []error
	nFailed := 0
	for len(tried) < limit {
		items, err := d.Store.ListUndispatched(ctx, createdBefore, min(sweepPage, limit-len(tried)))
		if err != nil {
			return n, fmt.Errorf("outbox sweep: list undispatched: %w", err)
		}
		// A page of items already tried this sweep (sent but not marked, or
		// failed) means there is nothing new to do.
		fresh := items[:0:0]
		for _, it := range items {
			if !tried[it.ID] {
				tried[it.ID] = true
				fresh = append(fresh, it)
			}
		}
		if len(fresh) == 0 {
			break
		}
		sent, failed := d.dispatch(ctx, fresh)
		n += len(sent)
		for id, e := range failed {
			nFailed++
			if len(failures) < 3 {
				failures = append(failures, fmt.Errorf("%s: %w", id, e))
			}
		}
		if len(items) < sweepPage || ctx.Err() != nil {
			break
		}
	}
	if nFailed > 0 {
		return n, fmt.Errorf("outbox sweep: %d item(s) not dispatched: %w", nFailed, errors.Join(failures...))
	}
	return n, ctx.Err()
}
