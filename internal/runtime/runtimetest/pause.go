package runtimetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// testPause: the Pauser contract. Where the runtime cannot pause
// (container.RuntimePauses false for its kind: Kubernetes), both calls are
// ErrNotSupported naming the operation, and the container runs on
// untouched. Where it can: Pause leaves the container PhasePaused (Inspect
// and List alike) and reported by Watch, a repeat succeeds, Resume runs it
// again (reported, a repeat succeeds); Start of a paused container resumes
// it; Stop of a paused one stops it; both calls on a stopped container are
// ErrConflict and on a missing one ErrNotFound.
func testPause(t *testing.T, h Harness) {
	p, ok := h.Runtime.(runtime.Pauser)
	if !ok {
		t.Fatalf("%T does not implement runtime.Pauser", h.Runtime)
	}
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Running(t)
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))

	if !container.RuntimePauses(rt.Kind()) {
		for op, call := range map[string]func(context.Context, runtime.Ref) error{"pause": p.Pause, "resume": p.Resume} {
			var re *runtime.Error
			if err := call(ctx, ref); !errors.Is(err, runtime.ErrNotSupported) || !errors.As(err, &re) || re.Op != op {
				t.Errorf("%s where the runtime cannot pause: %v, want ErrNotSupported naming %s", op, err, op)
			}
		}
		if st, err := rt.Inspect(ctx, ref); err != nil || st.Phase == runtime.PhasePaused {
			t.Errorf("after a refused pause: %+v, %v", st, err)
		}
		return
	}

	for range 2 { // the second is a repeat
		if err := p.Pause(ctx, ref); err != nil {
			t.Fatalf("pause: %v", err)
		}
	}
	waitFor(t, ctx, events, inst.ID, "paused", kindIs(runtime.EventPaused))
	wantPhase(t, ctx, rt, ref, runtime.PhasePaused, "after pause")
	for range 2 {
		if err := p.Resume(ctx, ref); err != nil {
			t.Fatalf("resume: %v", err)
		}
	}
	waitFor(t, ctx, events, inst.ID, "resumed", kindIs(runtime.EventResumed))
	wantPhase(t, ctx, rt, ref, runtime.PhaseRunning, "after resume")

	// Start of a paused container resumes it (a running one is left as it is).
	if err := p.Pause(ctx, ref); err != nil {
		t.Fatalf("pause again: %v", err)
	}
	if err := rt.Start(ctx, ref); err != nil {
		t.Fatalf("start of a paused container: %v", err)
	}
	wantPhase(t, ctx, rt, ref, runtime.PhaseRunning, "after start of a paused container")

	// Stop of a paused container stops it.
	if err := p.Pause(ctx, ref); err != nil {
		t.Fatalf("pause before stop: %v", err)
	}
	if err := rt.Stop(ctx, ref, 2*time.Second); err != nil {
		t.Fatalf("stop of a paused container: %v", err)
	}
	if st, err := rt.Inspect(ctx, ref); err != nil || st.Phase.Active() {
		t.Fatalf("after stop of a paused container: %+v, %v", st, err)
	}
	if err := p.Pause(ctx, ref); !runtime.IsConflict(err) {
		t.Errorf("pause of a stopped container: %v, want conflict", err)
	}
	if err := p.Resume(ctx, ref); !runtime.IsConflict(err) {
		t.Errorf("resume of a stopped container: %v, want conflict", err)
	}
	missing := runtime.Ref{InstanceID: container.NewID(), Node: ref.Node}
	if err := p.Pause(ctx, missing); !runtime.IsNotFound(err) {
		t.Errorf("pause of a missing container: %v, want not found", err)
	}
}

// wantPhase checks ref's phase by Inspect and List.
func wantPhase(t *testing.T, ctx context.Context, rt runtime.Runtime, ref runtime.Ref, want runtime.Phase, when string) {
	t.Helper()
	if st, err := rt.Inspect(ctx, ref); err != nil || st.Phase != want {
		t.Fatalf("%s: inspect %+v, %v; want %s", when, st, err, want)
	}
	all, err := rt.List(ctx)
	if err != nil {
		t.Fatalf("%s: list: %v", when, err)
	}
	for _, st := range all {
		if st.InstanceID == ref.InstanceID && st.Phase != want {
			t.Fatalf("%s: listed %s, want %s", when, st.Phase, want)
		}
	}
}
