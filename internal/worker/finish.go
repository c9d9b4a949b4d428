package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/store"
)

// errStale means the message's operation no longer applies to the
// instance; it is acknowledged, not retried.
type errStale struct{ why string }

func (e errStale) Error() string { return "stale: " + e.why }

func stale(format string, args ...any) error { return errStale{fmt.Sprintf(format, args...)} }

// finish completes what the operation's handler ended: done, or no longer
// applying (errStale), its outbox item is marked done and the delivery
// acknowledged. Anything else goes on outward, to be classified.
func (w *Worker) finish(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		start := w.now()
		err := next(ctx, j)
		var st errStale
		switch {
		case err == nil:
			w.markDone(ctx, j.Log, j.Msg.OutboxID)
			j.Log.InfoContext(ctx, "operation done", "duration_ms", w.now().Sub(start).Milliseconds())
		case errors.As(err, &st):
			w.markDone(ctx, j.Log, j.Msg.OutboxID)
			j.Log.InfoContext(ctx, "operation no longer applies; acknowledged", "why", st.why)
			return Settle(ack(err.Error()))
		}
		return err
	}
}

func (w *Worker) markDone(ctx context.Context, log *slog.Logger, id string) {
	if err := w.store.MarkDone(ctx, id, w.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		// The work is done; a redelivery finds it done by the instance's
		// status and acknowledges it.
		log.WarnContext(ctx, "marking outbox item done", "error", err)
	}
}
