package expiry_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/expiry"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// recorder is an Expirer that records each call and answers from its
// script: ExpiryLater for the first `later` calls of an id, then acted.
type recorder struct {
	mu    sync.Mutex
	calls map[string][]time.Time
	early []string // ids fired before their expiry
	later map[string]int
	fired chan string
}

func (r *recorder) Expire(_ context.Context, id string, at time.Time) (manager.ExpiryOutcome, error) {
	r.mu.Lock()
	r.calls[id] = append(r.calls[id], at)
	if time.Now().Before(at) {
		r.early = append(r.early, id)
	}
	n := len(r.calls[id])
	r.mu.Unlock()
	r.fired <- id
	if n <= r.later[id] {
		return manager.ExpiryLater, nil
	}
	return manager.ExpiryActed, nil
}

// active is a Lister of fixed instances, listed as a store's index would.
type active []container.Instance

func (a active) ListDeadlines(_ context.Context, until time.Time, _ string, _ int) (store.Page[container.Instance], error) {
	var out []container.Instance
	for _, in := range a {
		if at := in.Deadline(); at != nil && !at.After(until) {
			out = append(out, in)
		}
	}
	return store.Page[container.Instance]{Items: out}, nil
}

// retained is a stopped instance to be deleted at at.
func retained(id string, at time.Time) container.Instance {
	return container.Instance{ID: id, Status: fsm.Stopped, DeleteAt: &at, Retention: &container.Retention{Stopped: "1m"}}
}

func lived(id string, at time.Time) container.Instance {
	return container.Instance{ID: id, Status: "running", ExpiresAt: &at,
		Lifetime: &container.InstanceLifetime{OnExpiry: container.ExpiryStop, Default: "1m"}}
}

// TestTimers: a timer loaded at start (a lifetime's, and an ended
// instance's retention) and one noted later fire at their time, once each; a note that moves an expiry replaces its timer (the old
// time never fires); a note of none drops it; an expiry that must wait is
// tried again after Retry; one beyond the window is not held.
func TestTimers(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rec := &recorder{calls: map[string][]time.Time{}, later: map[string]int{"waits": 2}, fired: make(chan string, 100)}
	tm := expiry.New(expiry.Options{Expirer: rec, Store: active{lived("loaded", now.Add(50*time.Millisecond)), lived("far", now.Add(time.Hour)),
		retained("retained", now.Add(40*time.Millisecond))},
		Window: 10 * time.Minute, Retry: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	svc := tm.Service()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	moved, dropped, waits := now.Add(60*time.Millisecond), now.Add(70*time.Millisecond), now.Add(80*time.Millisecond)
	tm.Note("moved", &moved)
	later := now.Add(150 * time.Millisecond)
	tm.Note("moved", &later)
	tm.Note("dropped", &dropped)
	tm.Note("dropped", nil)
	tm.Note("waits", &waits)
	tm.Note("waits", &waits) // the same note again: one timer
	got := map[string]int{}
	for got["loaded"] < 1 || got["retained"] < 1 || got["moved"] < 1 || got["waits"] < 3 {
		select {
		case id := <-rec.fired:
			got[id]++
		case <-time.After(10 * time.Second):
			t.Fatalf("fired %v; want loaded, retained, moved once and waits three times", got)
		}
	}
	svc.Stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls["loaded"]) != 1 || len(rec.calls["retained"]) != 1 || len(rec.calls["moved"]) != 1 || len(rec.calls["waits"]) != 3 {
		t.Fatalf("calls %v", rec.calls)
	}
	if !rec.calls["moved"][0].Equal(later) {
		t.Fatalf("moved fired for %v, want its new expiry %v", rec.calls["moved"][0], later)
	}
	if len(rec.calls["dropped"]) != 0 || len(rec.calls["far"]) != 0 {
		t.Fatalf("a dropped or far expiry fired: %v", rec.calls)
	}
	if len(rec.early) > 0 {
		t.Fatalf("fired before their time: %v", rec.early)
	}
}
