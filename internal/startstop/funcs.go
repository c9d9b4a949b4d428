package startstop

import (
	"context"
	"time"
)

// The shapes of Func that berth's loops take.

// Every makes a pass at once and then every interval until ctx ends (a pass
// that overruns the interval delays the next, it never overlaps it).
func Every(interval time.Duration, pass func(ctx context.Context)) Func {
	return func(ctx context.Context, passed func()) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			pass(ctx)
			passed()
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}

// Once makes one pass and ends: a check at start-up that Stop may cut short.
func Once(pass func(ctx context.Context)) Func {
	return func(ctx context.Context, passed func()) error {
		pass(ctx)
		passed()
		return nil
	}
}

// Blocking runs a loop that has no passes of its own to signal and returns
// when ctx ends.
func Blocking(run func(ctx context.Context) error) Func {
	return func(ctx context.Context, _ func()) error { return run(ctx) }
}

// Until runs a loop that returns when ctx ends and cannot fail.
func Until(run func(ctx context.Context)) Func {
	return func(ctx context.Context, _ func()) error { run(ctx); return nil }
}
