package worker_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// TestCreateStartTimeout: a container that does not become stable within
// create_start_timeout. The create slot is given back, the instance fails
// saying why, and the container is stopped (kept, not left running).
func TestCreateStartTimeout(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 1)
		// The engine runs it; Inspect keeps saying "created".
		r.rt.slowStable = time.Hour
		res, err := runtime.NewResolver(r.rt)
		if err != nil {
			t.Fatal(err)
		}
		const timeout = 300 * time.Millisecond
		w := worker.New(worker.Options{Manager: r.m, Store: r.store, Runtimes: res, CreateSlots: r.slots,
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), MaxAttempts: 5, StopGrace: time.Second,
			StablePoll: 20 * time.Millisecond, CreateStartTimeout: timeout,
			Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		inst := r.create("sleeper")
		begin := time.Now()
		got := w.Process(ctx, delivery(t, r.item(inst.ID, container.OpCreate), 1))
		if !got.Ack || !strings.HasPrefix(got.Reason, "failed") || time.Since(begin) < timeout {
			t.Fatalf("Process = %+v after %v; want a failure acknowledged after the %v timeout", got, time.Since(begin), timeout)
		}

		// The slot.
		if n := r.slots.InUse(); n != 0 {
			t.Errorf("create slots in use after the timeout: %d, want 0", n)
		}
		// The instance.
		in := r.get(inst.ID)
		if in.Status != fsm.Failed || !strings.Contains(in.StatusReason, "start timeout") || in.FinishedAt == nil {
			t.Errorf("instance: status %s, reason %q, finished %v; want failed for the start timeout", in.Status, in.StatusReason, in.FinishedAt)
		}
		// The container: still there, with its logs, but not running.
		st, err := r.engine.Inspect(ctx, runtime.RefOf(in))
		if err != nil {
			t.Fatalf("the container: %v", err)
		}
		if st.Phase != runtime.PhaseExited {
			t.Errorf("the container after the timeout: %s, want exited (stopped)", st.Phase)
		}
		// And the slot really is free: the next create gets it at once.
		next := r.create("exit0")
		r.rt.slowStable = 0
		acquired, cancelNext := context.WithTimeout(ctx, 30*time.Second)
		defer cancelNext()
		if got := w.Process(acquired, delivery(t, r.item(next.ID, container.OpCreate), 1)); got.Reason != "done" {
			t.Errorf("the next create: %+v", got)
		}
	})
}
