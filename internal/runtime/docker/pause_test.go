package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestWatchReplayedPause: a watcher that starts after a pause and its
// resume (WatchSince in the past, as the watcher function's invocations
// do) replays the resume but not the pause, which no longer tells the
// container's state: taken for the present, it would record a running
// instance paused.
func TestWatchReplayedPause(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 60*time.Second)
	since := time.Now().Add(-time.Second)
	inst := e.instance("sleep 600")
	ref := e.createStart(t, inst)
	if err := e.Pause(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := e.Resume(ctx, ref); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := e.WatchSince(wctx, since)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.InstanceID != inst.ID {
			continue
		}
		if ev.Kind == runtime.EventPaused {
			t.Fatalf("replayed a pause the container has left: %+v", ev)
		}
		if ev.Kind == runtime.EventResumed {
			break
		}
	}
	// Paused now: a replay reports the pause.
	if err := e.Pause(ctx, ref); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, inst.ID, "paused", kindIs(runtime.EventPaused))
}
