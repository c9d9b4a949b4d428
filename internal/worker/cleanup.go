package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// cleanup applies a node or group policy (cleanup_*, group_*) to one
// member through manager.ApplyCleanup, which decides the step from the
// member's status and writes it with the cleanup item completed, so a
// redelivery, or a crash at any point, leads to one request, never two.
// The worker's part is the runtime's: waiting while the member is in the
// middle of an operation, and halting a failed member's container.
func (w *Worker) cleanup(ctx context.Context, log *slog.Logger, msg outbox.Message) error {
	deadline := w.now().Add(w.timeout)
	poll := w.poll
	ctx = manager.WithTrace(ctx, msg.TraceContext)
	for {
		step, from, err := w.m.ApplyCleanup(ctx, manager.Cleanup{InstanceID: msg.InstanceID, Op: msg.Op, OutboxID: msg.OutboxID,
			RequestID: msg.RequestID, At: w.now().UTC()}, w.halt)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return stale("member already deleted")
		case err != nil:
			return err
		}
		switch step {
		case manager.StepNothing:
			return stale("member is %s: nothing left for %s", from, msg.Op)
		case manager.StepRestarted:
			return stale("member is %s: started again since the exit %s followed", from, msg.Op)
		case manager.StepWait:
			if !w.now().Before(deadline) {
				return runtime.Errorf(runtime.ErrUnavailable, string(msg.Op), msg.InstanceID, "", "member still %s after %s", from, w.timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
			poll = min(poll*2, 2*time.Second)
			continue
		}
		log.InfoContext(ctx, "group policy applied", "from", from, "step", step.String())
		return nil
	}
}

// halt stops a failed member's container if it still runs (a create that
// timed out, a start that failed after the process began).
func (w *Worker) halt(ctx context.Context, inst container.Instance) error {
	rt, err := w.rt.ForInstance(inst)
	if err != nil {
		return err
	}
	if err := rt.Stop(ctx, runtime.RefOf(inst), w.grace); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	return nil
}
