// Package expiry holds the timers that carry out instances' lifetimes and
// the retention of ended ones on the local server (`berth serve`) and in
// the AWS watcher: one timer per instance whose deadline
// (manager.Deadline: its expires_at, or its delete_at once ended) falls
// within a window, fed by the manager's commits and armed again from the
// store at start and every half window, each firing
// manager.Manager.Expire, whose conditional write makes a stale or
// repeated timer a no-op. The reconciler is the net behind it
// (reconcile.Reconciler acts on instances past their deadline).
package expiry

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/startstop"
	"github.com/berth-io/berth/internal/store"
)

// Expirer carries out a reached lifetime (manager.Manager.Expire): it acts
// once at most per expiry whoever calls it, and says ExpiryLater when the
// caller should try again.
type Expirer interface {
	Expire(ctx context.Context, id string, at time.Time) (manager.ExpiryOutcome, error)
}

var _ Expirer = (*manager.Manager)(nil)

// Lister reads the instances whose deadline falls within the window, to
// arm the timers: store.InstanceStore.ListDeadlines, which reads no
// other instance.
type Lister interface {
	ListDeadlines(ctx context.Context, until time.Time, cursor string, limit int) (store.Page[container.Instance], error)
}

// Defaults of Options.
const (
	// DefaultWindow is Options.Window's default: timers are held for the
	// instances expiring within it, the rest are armed by a later load.
	DefaultWindow = 15 * time.Minute
	// DefaultConcurrency is Options.Concurrency's default.
	DefaultConcurrency = 8
)

// Options configure Timers.
type Options struct {
	Expirer Expirer
	Store   Lister
	// Window: timers are held for instances expiring within it. Defaults
	// to DefaultWindow.
	Window time.Duration
	// Reload is how often the store is read again. Defaults to half the
	// window: enough where every write is noted (berth serve); a process
	// that notes no write (the AWS watcher) reads more often.
	Reload time.Duration
	// Retry is how soon an expiry that could not be carried out yet (or
	// failed) is tried again. Defaults to manager.DefaultExpiryRetry.
	Retry time.Duration
	// Concurrency bounds the expiries carried out at once. Defaults to
	// DefaultConcurrency.
	Concurrency int
	// Clock and Logger default to time.Now and slog.Default.
	Clock  func() time.Time
	Logger *slog.Logger
}

// Timers holds the lifetime timers. Note feeds it; Service runs it.
type Timers struct {
	o   Options
	mu  sync.Mutex
	due dueHeap
	// noted is each instance's expiry as last noted: a heap entry for
	// another is stale. done marks one carried out (or found moot), so
	// that the commits its own action makes do not arm it again.
	noted map[string]noted
	wake  chan struct{}
}

// New returns Timers; Service runs them.
func New(o Options) *Timers {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Reload <= 0 {
		o.Reload = o.Window / 2
	}
	if o.Retry <= 0 {
		o.Retry = manager.DefaultExpiryRetry
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Timers{o: o, noted: map[string]noted{}, wake: make(chan struct{}, 1)}
}

// Note tells the timers that berth acts on instance id next at at (its
// container.Instance.Deadline; nil: none, or it is gone). It never blocks, so the manager's OnCommit may
// call it. An expiry beyond the window is left to a later load.
func (t *Timers) Note(id string, at *time.Time) {
	if t == nil {
		return // the manager's first commits, before the timers are made
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if at == nil {
		delete(t.noted, id)
		return
	}
	t.arm(id, *at)
}

// arm holds a timer for id at at when at is within the window. t.mu held.
func (t *Timers) arm(id string, at time.Time) {
	if prev, ok := t.noted[id]; ok && prev.expiry.Equal(at) {
		if now := t.o.Clock(); !prev.done && !at.After(now) {
			// Due and waiting for a retry (a create or start in the
			// way): this commit may be the one that let it through.
			t.push(entry{id: id, when: now, expiry: at})
		}
		return
	}
	if at.After(t.o.Clock().Add(t.o.Window)) {
		delete(t.noted, id)
		return
	}
	t.noted[id] = noted{expiry: at}
	t.push(entry{id: id, when: at, expiry: at})
}

// push adds a timer and wakes the loop to wait for it. t.mu held.
func (t *Timers) push(e entry) {
	heap.Push(&t.due, e)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Service runs the timers until ctx ends: a load from the store at once
// (so expiries survive a crash), then every Reload.
func (t *Timers) Service() *startstop.Loop {
	return startstop.New("expiry timers", startstop.Blocking(t.run))
}

func (t *Timers) run(ctx context.Context) error {
	sem := make(chan struct{}, t.o.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	reload := time.NewTicker(t.o.Reload)
	defer reload.Stop()
	if err := t.load(ctx); err != nil && ctx.Err() == nil {
		t.o.Logger.ErrorContext(ctx, "loading expiries", "error", err)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		for _, e := range t.take() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				t.fire(ctx, e)
			}()
		}
		timer.Reset(t.untilNext())
		select {
		case <-ctx.Done():
			return nil
		case <-t.wake:
		case <-timer.C:
		case <-reload.C:
			if err := t.load(ctx); err != nil && ctx.Err() == nil {
				t.o.Logger.ErrorContext(ctx, "loading expiries", "error", err)
			}
		}
	}
}

// take pops the entries that are due and still current.
func (t *Timers) take() []entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.o.Clock()
	var out []entry
	for t.due.Len() > 0 && !t.due[0].when.After(now) {
		e := heap.Pop(&t.due).(entry)
		if cur, ok := t.noted[e.id]; ok && !cur.done && cur.expiry.Equal(e.expiry) {
			out = append(out, e)
		}
	}
	return out
}

// untilNext is the wait for the earliest entry (a long one when none).
func (t *Timers) untilNext() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.due.Len() == 0 {
		return t.o.Window
	}
	return max(0, t.due[0].when.Sub(t.o.Clock()))
}

// fire carries out e; an expiry that must wait, or failed, is armed again
// Retry later.
func (t *Timers) fire(ctx context.Context, e entry) {
	out, err := t.o.Expirer.Expire(ctx, e.id, e.expiry)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.o.Logger.WarnContext(ctx, "expiry failed; trying again", "instance_id", e.id, "expires_at", e.expiry, "error", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.noted[e.id]; !ok || !cur.expiry.Equal(e.expiry) {
		return // moved since (extended, started again, gone): the new note rules
	}
	if err == nil && out != manager.ExpiryLater {
		t.noted[e.id] = noted{expiry: e.expiry, done: true}
		return
	}
	t.push(entry{id: e.id, when: t.o.Clock().Add(t.o.Retry), expiry: e.expiry})
}

// load arms a timer for every instance of the store whose deadline falls
// within the window (those past it included: what fell while the process
// was down).
func (t *Timers) load(ctx context.Context) error {
	t.mu.Lock()
	t.forgetDone()
	t.mu.Unlock()
	until := t.o.Clock().Add(t.o.Window)
	for cursor := ""; ; {
		page, err := t.o.Store.ListDeadlines(ctx, until, cursor, 100)
		if err != nil {
			return fmt.Errorf("listing the instances due within %s: %w", t.o.Window, err)
		}
		t.mu.Lock()
		for _, inst := range page.Items {
			if at, ok := manager.Deadline(inst); ok {
				t.arm(inst.ID, at)
			}
		}
		t.mu.Unlock()
		if cursor = page.NextCursor; cursor == "" {
			return nil
		}
	}
}

// forgetDone drops the expiries carried out more than a window ago: the
// commits their action made are long past. t.mu held.
func (t *Timers) forgetDone() {
	old := t.o.Clock().Add(-t.o.Window)
	for id, n := range t.noted {
		if n.done && n.expiry.Before(old) {
			delete(t.noted, id)
		}
	}
}

// noted is what the timers know of one instance's expiry.
type noted struct {
	expiry time.Time
	done   bool
}

// entry is one timer: fire at when the expiry of instance id at expiry.
type entry struct {
	id     string
	when   time.Time
	expiry time.Time
}

// dueHeap orders entries by when (container/heap).
type dueHeap []entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].when.Before(h[j].when) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

// Push and Pop are container/heap's.
func (h *dueHeap) Push(x any) { *h = append(*h, x.(entry)) }

// Pop removes the last entry (container/heap's).
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
