package runtimetest

import (
	"errors"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// testStats: the StatsReader contract. A running container gives a reading
// where the harness says the runtime serves usage (StatsServed), and
// runtime.ErrNotServed, naming why, where it does not; a container that
// does not exist is not found, whatever the runtime serves.
func testStats(t *testing.T, h Harness) {
	sr, ok := h.Runtime.(runtime.StatsReader)
	if !ok {
		t.Fatalf("%T does not implement runtime.StatsReader", h.Runtime)
	}
	ctx := testenv.Context(t, h.Timeout)
	events := watch(t, ctx, h.Runtime)
	inst := h.Running(t)
	ref := createStarted(t, ctx, h.Runtime, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))

	s, err := sr.Stats(ctx, ref)
	switch {
	case !h.StatsServed:
		var re *runtime.Error
		if !errors.Is(err, runtime.ErrNotServed) || !errors.As(err, &re) || re.Op != "stats" {
			t.Errorf("stats where the runtime serves none: %v, want ErrNotServed naming the operation", err)
		}
	case err != nil:
		t.Fatalf("stats of a running container: %v", err)
	default:
		if s.At.IsZero() || s.CPU.Cores < 0 || s.Memory.UsageBytes == 0 {
			t.Errorf("stats of a running container: %+v, want a time, cores ≥ 0 and memory in use", s)
		}
		if s.PIDs != nil && *s.PIDs == 0 {
			t.Errorf("pids reported as 0 for a running container")
		}
	}

	if _, err := sr.Stats(ctx, runtime.Ref{InstanceID: container.NewID()}); !runtime.IsNotFound(err) {
		t.Errorf("stats of a missing container: %v, want not found", err)
	}
}
