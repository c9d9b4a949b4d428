package worker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// freeze carries out a pause (pause true) or a resume. There is no claim:
// the request left the instance running (paused), and the worker asks the
// runtime while it still is, then records paused (running) through
// manager.Frozen, which completes the item. Both runtime calls are
// idempotent, so a redelivery after a crash between them repeats the call
// harmlessly. What makes the request moot acknowledges it (stale): the
// instance gone or moved on (a stop or delete asked meanwhile, which deals
// with the container as it finds it), the container not running any more
// (ErrConflict) or gone (ErrNotFound: the state loop records that), a
// runtime that cannot pause (ErrNotSupported: the API refuses it first).
// A pause that fails never fails the instance (fail.go): its container
// still runs as it did.
func (w *Worker) freeze(ctx context.Context, log *slog.Logger, msg outbox.Message, pause bool) error {
	from, to := fsm.Running, fsm.Paused
	call := w.rt.Pause
	if !pause {
		from, to, call = fsm.Paused, fsm.Running, w.rt.Resume
	}
	inst, err := w.store.GetInstance(ctx, msg.InstanceID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return stale("instance %s no longer exists", msg.InstanceID)
	case err != nil:
		return err
	case inst.Status == to && inst.RestartAt == nil:
		return nil // done already (an earlier pause, or the state loop)
	case inst.Status != from || inst.RestartAt != nil:
		return stale("instance is %s, not %s", inst.Status, from)
	}
	err = call(ctx, inst)
	switch {
	case errors.Is(err, runtime.ErrNotSupported), runtime.IsConflict(err), runtime.IsNotFound(err):
		log.InfoContext(ctx, string(msg.Op)+" no longer applies", "error", err)
		return stale("%v", err)
	case err != nil:
		return err
	}
	err = w.m.Frozen(ctx, inst.ID, msg.OutboxID, pause, w.now().UTC())
	switch {
	case errors.Is(err, manager.ErrMoved):
		return stale("%v", err)
	case errors.Is(err, store.ErrNotFound):
		return stale("instance deleted while its %s ran", msg.Op)
	}
	return err
}

// pauseHandler routes OpPause and OpResume (process.go's route).
func (w *Worker) pauseHandler(ctx context.Context, j *Job) error {
	return w.freeze(ctx, j.Log, j.Msg, j.Msg.Op == container.OpPause)
}
