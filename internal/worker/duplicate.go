package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// dedupe is the duplicate check: it reads the message's outbox item, and
// acknowledges a delivery whose item is gone or already finished (delivery
// is at least once) without going further. A failed read is retried.
func (w *Worker) dedupe(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		item, err := w.store.GetOutbox(ctx, j.Msg.OutboxID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			j.Log.InfoContext(ctx, "outbox item gone; acknowledging")
			return Settle(ack("stale: outbox item gone"))
		case err != nil:
			return retryable(fmt.Errorf("reading outbox item: %w", err))
		case item.State == container.OutboxDone || item.State == container.OutboxFailed:
			j.Log.InfoContext(ctx, "outbox item already finished; duplicate delivery", "state", item.State)
			return Settle(ack("stale: outbox item " + string(item.State)))
		}
		j.Item = item
		return next(ctx, j)
	}
}
