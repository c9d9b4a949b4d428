package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/startstop"
	"github.com/berth-io/berth/internal/store"
)

// DefaultSweepEvery is the Watcher's safety-net interval.
const DefaultSweepEvery = 5 * time.Second

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
	log        *slog.Logger
	notify     chan struct{}
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// SweepEvery is the safety-net interval; 0 means DefaultSweepEvery.
	SweepEvery time.Duration
	// Logger defaults to the Dispatcher's.
	Logger *slog.Logger
}

// NewWatcher returns a watcher dispatching through d. Call Run to start it.
func NewWatcher(d *Dispatcher, opts WatcherOptions) *Watcher {
	w := &Watcher{d: d, sweepEvery: opts.SweepEvery, log: opts.Logger, notify: make(chan struct{}, 1)}
	if w.sweepEvery <= 0 {
		w.sweepEvery = DefaultSweepEvery
	}
	if w.log == nil {
		w.log = d.log()
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
func (w *Watcher) Run(ctx context.Context) error { return w.run(ctx, func() {}) }

// Service is Run as the local server's background service, which signals
// each pass's end (startstop.Loop.NextPass).
func (w *Watcher) Service() *startstop.Loop { return startstop.New("outbox watcher", w.run) }

func (w *Watcher) run(ctx context.Context, passed func()) error {
	ticker := time.NewTicker(w.sweepEvery)
	defer ticker.Stop()
	w.pass(ctx, "start")
	passed()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.notify:
			w.pass(ctx, "notify")
		case <-ticker.C:
			w.pass(ctx, "sweep")
		}
		passed()
	}
}

// pass dispatches every pending item.
func (w *Watcher) pass(ctx context.Context, why string) {
	n, err := w.d.sweep(ctx, w.d.now().Add(pendingMargin), 1<<30)
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
