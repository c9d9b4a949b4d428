package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/store"
)

// failing is the last word on a failure the layers inside left: the
// instance is failed, the container of an errUnstable stopped, and the
// delivery acknowledged, since no redelivery would mend it.
func (w *Worker) failing(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		err := next(ctx, j)
		if decided(err) {
			return err
		}
		w.fail(ctx, j.Log, j.Msg, j.Attempt, err)
		w.stopUnstable(ctx, j.Log, err)
		return Settle(ack("failed: " + err.Error()))
	}
}

// ownedStatuses are the statuses in which an operation still speaks for
// the instance. Once a later request has moved it on (a stop while the
// create still waited for stability, say), the operation's failure is its
// own: the newer request's worker reports on the instance.
var ownedStatuses = map[container.Op][]fsm.Status{
	container.OpCreate: {fsm.Pending, fsm.Creating, fsm.Running},
	container.OpStart:  {fsm.StartPending, fsm.Starting, fsm.Running},
	container.OpStop:   {fsm.StopPending, fsm.Stopping},
	container.OpDelete: {fsm.DeletePending, fsm.Deleting},
}

// fail moves the instance to failed with the error as status_reason and
// marks the outbox item failed. Nothing is dropped silently: the instance
// shows why, the event history records it.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, msg outbox.Message, attempt int, cause error) {
	log.ErrorContext(ctx, "operation failed", "error", cause)
	if err := w.store.MarkFailed(ctx, msg.OutboxID, attempt, cause.Error(), w.now()); err != nil {
		log.WarnContext(ctx, "marking outbox item failed", "error", err)
	}
	if msg.Op.Cleanup() || msg.Op.PauseOp() {
		// A policy that could not be applied leaves the member as it is:
		// its own status is not the cleanup's to judge. Nor is a pause's or
		// a resume's: the container goes on as it was.
		return
	}
	// Only while the operation still speaks for the instance (ownedStatuses).
	// A create or start that failed may have run the process (a start
	// timeout, a crash loop): its last words say why.
	f := manager.Failure{Reason: fmt.Sprintf("%s failed: %v", msg.Op, cause), At: w.now().UTC(), While: ownedStatuses[msg.Op]}
	if msg.Op == container.OpCreate || msg.Op == container.OpStart {
		f.LastWords = w.lastWordsReader()
	}
	_, err := w.m.Fail(ctx, msg.InstanceID, f)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		log.WarnContext(ctx, "failing the instance", "error", err)
	}
}
