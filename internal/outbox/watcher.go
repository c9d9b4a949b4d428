package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// DefaultSweepEvery is the Watcher's safety-net interval.
const DefaultSweepEvery = 5 * time.Second

// DefaultMarkAfter is the MarkAfter of berth serve's watcher (capped there
// at a quarter of outbox_sweep_after). Defaults to 1 s: past the end of
// an operation the worker does at once, far below the sweep's age.
const DefaultMarkAfter = time.Second

// pendingMargin widens "every pending item" past now, so that an item
// stamped with the current clock reading (or a slightly later one from a
// coarser clock) is not left for the next pass.
const pendingMargin = time.Minute

// Watcher is the local server's stand-in for DynamoDB Streams: it dispatches
// pending outbox items as soon as it is told that some were committed
// (Notify), and sweeps on a timer as a safety net (an item whose send failed,
// a write whose notification was lost, items left from before a restart).
//
// Notifications coalesce: a burst of Notify calls while a pass runs causes
// one more pass, not one per call. A pass dispatches every pending item, so
// there is no poll delay on the happy path: commit → Notify → ListUndispatched
// → Send.
type Watcher struct {
	d          *Dispatcher
	sweepEvery time.Duration
	markAfter  time.Duration
	log        *slog.Logger
	notify     chan struct{}
	// held are the items sent and not yet marked (MarkAfter); nil
	// without MarkAfter.
	held *heldItems
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// SweepEvery is the safety-net interval; 0 means DefaultSweepEvery.
	SweepEvery time.Duration
	// MarkAfter, when positive, defers marking each sent item dispatched:
	// the watcher remembers what it sent (and does not send it again),
	// and MarkAfter later marks those items still pending. An item a
	// worker has finished by then is never marked, which takes the mark's
	// durable write off the path of an operation the worker does at once
	// (it would otherwise sit just before the worker's claim, in a store
	// that commits one write at a time). Only for queues that live in this
	// process (memqueue): a restart loses them and this memory together,
	// and the start pass sends every pending item again, as it would
	// have re-sent the marked ones (RequeueDispatched). It must stay well
	// below the reconciler's outbox_sweep_after, which re-sends what is
	// still pending by then. While more than a page of items (100) is
	// held, the pass sends only what is on the first page and the rest
	// waits for the marks. 0 (the default) marks each item once it is sent.
	MarkAfter time.Duration
	// Logger defaults to the Dispatcher's.
	Logger *slog.Logger
}

// NewWatcher returns a watcher dispatching through d. Call Run to start it.
func NewWatcher(d *Dispatcher, opts WatcherOptions) *Watcher {
	w := &Watcher{d: d, sweepEvery: opts.SweepEvery, markAfter: opts.MarkAfter, log: opts.Logger, notify: make(chan struct{}, 1)}
	if w.sweepEvery <= 0 {
		w.sweepEvery = DefaultSweepEvery
	}
	if w.log == nil {
		w.log = d.log()
	}
	if w.markAfter > 0 {
		w.held = newHeldItems(d.now)
	}
	return w
}

// Notify tells the watcher that outbox items were committed. It never
// blocks; call it after the commit (a notification before the commit may
// find nothing, leaving the item to the sweep).
func (w *Watcher) Notify() {
	select {
	case w.notify <- struct{}{}:
	default: // a pass is already due
	}
}

// Run dispatches until ctx ends: once at start (items left pending from
// before), on every notification, and every SweepEvery. It returns ctx's
// error.
func (w *Watcher) Run(ctx context.Context) error {
	ticker := time.NewTicker(w.sweepEvery)
	defer ticker.Stop()
	// marks fires when held items are due to be marked (MarkAfter); it
	// is stopped and drained whenever it is not armed.
	marks := time.NewTimer(time.Hour)
	marks.Stop()
	defer marks.Stop()
	armed := false
	arm := func() {
		if w.held == nil || armed {
			return
		}
		if first, ok := w.held.oldest(); ok {
			marks.Reset(max(first.Add(w.markAfter).Sub(w.d.now()), 0))
			armed = true
		}
	}
	w.pass(ctx, "start")
	arm()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.notify:
			w.pass(ctx, "notify")
		case <-ticker.C:
			w.pass(ctx, "sweep")
		case <-marks.C:
			armed = false
			if w.markDue(ctx) {
				// Items past the first page wait for the marks.
				w.pass(ctx, "marks")
			}
		}
		arm()
	}
}

// markDue marks dispatched the held items sent MarkAfter ago that are
// still pending, and says whether it marked any. A failed mark leaves the
// item pending: a later pass sends it again, which the worker drops as a
// duplicate (as after a failed mark of the Dispatcher's own).
func (w *Watcher) markDue(ctx context.Context) bool {
	ids := w.held.due(w.markAfter)
	marked := false
	for _, id := range ids {
		it, err := w.d.Store.GetOutbox(ctx, id)
		if err != nil || it.State != container.OutboxPending {
			continue // gone, or finished (or failed) by the worker: nothing to mark
		}
		if err := w.d.Store.MarkDispatched(ctx, id, w.d.now()); err != nil {
			w.log.WarnContext(ctx, "outbox item sent but not marked dispatched", itemAttrs(it, "error", err)...)
			continue
		}
		marked = true
	}
	return marked
}

// pass dispatches every pending item (but those held, see MarkAfter).
func (w *Watcher) pass(ctx context.Context, why string) {
	n, err := w.d.sweepWith(ctx, w.d.now().Add(pendingMargin), 1<<30, w.held)
	if err != nil && ctx.Err() == nil {
		w.log.WarnContext(ctx, "outbox watcher pass incomplete; the next pass retries", "trigger", why, "dispatched", n, "error", err)
	} else if n > 0 && why == "sweep" {
		w.log.InfoContext(ctx, "outbox watcher sweep dispatched items a notification missed", "dispatched", n)
	}
}

// Committed is a store.Hooked callback: it notifies the watcher of a
// commit that added an outbox item. The local server passes it to the
// manager (manager.Options.OnCommit).
func (w *Watcher) Committed(c store.Commit) {
	if c.Outbox {
		w.Notify()
	}
}
