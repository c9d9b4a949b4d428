package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

func TestWatch(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	events, err := e.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inst := e.instance("sleep 0.2; exit 5")
	ref := e.createStart(t, inst)

	start := time.Now()
	started := waitEvent(t, events, inst.ID, "started", kindIs(runtime.EventStarted))
	if started.Node != "h1" || started.RuntimeID != ref.RuntimeID || started.Time.IsZero() {
		t.Errorf("started = %+v", started)
	}
	exited := waitEvent(t, events, inst.ID, "exited", kindIs(runtime.EventExited))
	if exited.ExitCode == nil || *exited.ExitCode != 5 || exited.Time.Before(started.Time) {
		t.Errorf("exited = %+v (code %v)", exited, exited.ExitCode)
	}
	// The events carry the run's own times, the ones Inspect gives: the
	// manager compares them with what workers and the reconciler inspect
	// (an event's emission time can fall after a quick exit).
	st, err := e.Inspect(testenv.Context(t, 30*time.Second), ref)
	if err != nil {
		t.Fatal(err)
	}
	if st.StartedAt == nil || !started.Time.Equal(*st.StartedAt) || st.FinishedAt == nil || !exited.Time.Equal(*st.FinishedAt) ||
		exited.RunStartedAt == nil || !exited.RunStartedAt.Equal(*st.StartedAt) {
		t.Errorf("event times started %s exited %s (run started %v), inspect says %v %v", started.Time, exited.Time, exited.RunStartedAt, st.StartedAt, st.FinishedAt)
	}
	if err := e.Delete(testenv.Context(t, 30*time.Second), ref); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, inst.ID, "destroyed", kindIs(runtime.EventDestroyed))
	t.Logf("start → destroyed seen in %v", time.Since(start))

	// Containers that are not berth's, or of another scope, are not reported.
	other := newEngine(t)
	stranger := other.instance("exit 0")
	other.createStart(t, stranger)
	mine := e.instance("exit 0")
	e.createStart(t, mine)
	for ev := range events {
		if ev.InstanceID == stranger.ID {
			t.Fatalf("event of another scope: %+v", ev)
		}
		if ev.InstanceID == mine.ID && ev.Kind == runtime.EventExited {
			break
		}
	}

	cancel()
	for range events { // must be closed once ctx ends
	}
}
