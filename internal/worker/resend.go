package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
)

// Waits that spend no attempt (a runtime that cannot be reached, a webhook
// receiver that failed) re-send their message as a fresh delayed one, so
// that no number of them reaches the queue's dead-letter limit; they end
// when they have lasted their limit (UnavailableRetryFor,
// DeliveryRetryFor). These two steps are theirs.

// continueWait is msg's wait one retry further: its outbox.Unavailable (a
// new one from now, with prior attempts spent on real failures, for the
// first retry) and how long it has lasted.
func continueWait(msg outbox.Message, now time.Time, prior int) (outbox.Unavailable, time.Duration) {
	u := outbox.Unavailable{Since: now.UTC(), PriorAttempts: prior}
	if msg.Unavailable != nil {
		u.Since, u.Retries = msg.Unavailable.Since, msg.Unavailable.Retries
	}
	u.Retries++
	return u, now.Sub(u.Since)
}

// resend answers msg with itself carrying u, sent again after the capped
// backoff (the worker's, or for a delivery its DeliveryBackoff) of
// u.Retries under the id "<outbox id>-<tag><retries>" (one
// per retry, so a repeat of this very step sends no second copy). When
// that message cannot be made, the queue's own redelivery after the same
// delay stands in, and requeued is false.
func (w *Worker) resend(ctx context.Context, log *slog.Logger, msg outbox.Message, u outbox.Unavailable, tag, reason string) (res Result, requeued bool) {
	backoff := w.backoff
	if msg.Op == container.OpDeliver {
		backoff = w.deliveryBackoff
	}
	delay := min(backoff(u.Retries), queue.MaxDelay)
	next := msg
	next.Unavailable = &u
	res = Result{Delay: delay, Reason: reason}
	out, err := next.Outgoing(fmt.Sprintf("%s-%s%d", msg.OutboxID, tag, u.Retries), delay)
	if err != nil {
		log.WarnContext(ctx, "cannot re-send; the queue redelivers it", "error", err)
		return res, false
	}
	res.Requeue = &out
	return res, true
}
