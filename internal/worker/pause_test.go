package worker_test

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
)

// Pause and Resume go to the engine's Pauser unless the engine is down
// (the faults wrapper keeps the runtime's optional interfaces).
func (f *faults) Pause(ctx context.Context, ref runtime.Ref) error {
	if err := f.unreachable("pause", ref.InstanceID); err != nil {
		return err
	}
	return f.Runtime.(runtime.Pauser).Pause(ctx, ref)
}

func (f *faults) Resume(ctx context.Context, ref runtime.Ref) error {
	if err := f.unreachable("resume", ref.InstanceID); err != nil {
		return err
	}
	return f.Runtime.(runtime.Pauser).Resume(ctx, ref)
}

// TestPauseWorker, on both stores and the real engine: the pause worker
// freezes the container and records paused (the item done; a redelivery
// acknowledged as a duplicate), the resume worker thaws it and records
// running; a pause overtaken by a stop is acknowledged as stale and leaves
// the container to the stop; a pause while the engine is down waits for it
// (re-sent, no attempt spent) and never fails the instance.
func TestPauseWorker(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 0)
		ctx := context.Background()
		inst := r.create("sleeper")
		if res := r.run(inst.ID, container.OpCreate); res.Reason != "done" {
			t.Fatalf("create: %+v", res)
		}
		r.wantStatus(inst.ID, fsm.Running)
		if _, err := r.m.Pause(ctx, alice, inst.ID, nil, "req-pause"); err != nil {
			t.Fatal(err)
		}
		it := r.item(inst.ID, container.OpPause)
		if res := r.w.Process(ctx, delivery(t, it, 1)); !res.Ack || res.Reason != "done" {
			t.Fatalf("pause: %+v", res)
		}
		paused := r.wantStatus(inst.ID, fsm.Paused)
		if st, err := r.engine.Inspect(ctx, runtime.RefOf(paused)); err != nil || st.Phase != runtime.PhasePaused {
			t.Fatalf("engine says %+v, %v; want paused", st, err)
		}
		if res := r.w.Process(ctx, delivery(t, it, 2)); !res.Ack || res.Reason == "done" {
			t.Fatalf("a redelivered pause: %+v, want acknowledged as a duplicate", res)
		}
		if _, err := r.m.Resume(ctx, alice, inst.ID, nil, "req-resume"); err != nil {
			t.Fatal(err)
		}
		if res := r.run(inst.ID, container.OpResume); !res.Ack || res.Reason != "done" {
			t.Fatalf("resume: %+v", res)
		}
		running := r.wantStatus(inst.ID, fsm.Running)
		if st, err := r.engine.Inspect(ctx, runtime.RefOf(running)); err != nil || st.Phase != runtime.PhaseRunning {
			t.Fatalf("engine says %+v, %v; want running", st, err)
		}

		// The engine down: the pause waits for it and the instance stays running.
		if _, err := r.m.Pause(ctx, alice, inst.ID, nil, "req-pause-2"); err != nil {
			t.Fatal(err)
		}
		it = r.item(inst.ID, container.OpPause)
		r.rt.down.Store(true)
		if res := r.w.Process(ctx, delivery(t, it, 1)); res.Ack || res.Requeue == nil {
			t.Fatalf("a pause while the engine is down: %+v, want re-sent", res)
		}
		r.rt.down.Store(false)
		r.wantStatus(inst.ID, fsm.Running)

		// A stop asked meanwhile wins: the pause is stale, the stop stops.
		if _, err := r.m.Stop(ctx, alice, inst.ID, nil, "req-stop"); err != nil {
			t.Fatal(err)
		}
		if res := r.w.Process(ctx, delivery(t, it, 2)); !res.Ack || res.Reason == "done" {
			t.Fatalf("a pause overtaken by a stop: %+v, want acknowledged as stale", res)
		}
		if res := r.run(inst.ID, container.OpStop); res.Reason != "done" {
			t.Fatalf("stop: %+v", res)
		}
		r.wantStatus(inst.ID, fsm.Stopped)
	})
}
