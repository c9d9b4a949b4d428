package startstop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/startstop"
)

// wait fails the test when ch is not closed within a generous bound: the
// bound is a guard against hanging, not what the test waits for.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not signalled", what)
	}
}

func TestLoopSignalsStartPassesAndStop(t *testing.T) {
	var passes atomic.Int32
	l := startstop.New("ticker", startstop.Every(time.Millisecond, func(context.Context) { passes.Add(1) }))
	next := l.NextPass()
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait(t, l.Started(), "started")
	wait(t, next, "first pass")
	for range 3 {
		wait(t, l.NextPass(), "a later pass")
	}
	if n := passes.Load(); n < 4 {
		t.Errorf("%d passes signalled 4 times", n)
	}
	l.Stop()
	wait(t, l.Stopped(), "stopped")
	if err := l.Err(); err != nil {
		t.Errorf("a stopped loop failed: %v", err)
	}
	l.Stop() // again: nothing to do
}

func TestLoopStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := startstop.New("blocking", startstop.Blocking(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }))
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	wait(t, l.Stopped(), "stopped by ctx")
	if err := l.Err(); err != nil {
		t.Errorf("ctx's own error is not a failure: %v", err)
	}
}

func TestLoopFailure(t *testing.T) {
	boom := errors.New("boom")
	l := startstop.New("failing", startstop.Blocking(func(context.Context) error { return boom }))
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait(t, l.Stopped(), "stopped on its own")
	if !errors.Is(l.Err(), boom) {
		t.Errorf("Err = %v, want boom", l.Err())
	}
}

func TestLoopStartsOnce(t *testing.T) {
	l := startstop.New("once", startstop.Once(func(context.Context) {}))
	l.Stop() // before Start: nothing to stop, no wait
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background()); err == nil {
		t.Error("a second Start succeeded")
	}
	wait(t, l.Stopped(), "a single pass ends the loop")
	if l.Err() != nil {
		t.Errorf("ending after its pass is not a failure: %v", l.Err())
	}
}
