package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/runtime"
)

// errReceiver is a delivery attempt that failed: its receiver (or the event
// bus) did not take it.
type errReceiver struct{ error }

func (e errReceiver) Unwrap() error { return e.error }

// waiting answers the failures that are waited out rather than retried (no
// attempt spent, resend.go): a runtime that could not be reached, a
// receiver that did not take a delivery. The rest go on outward.
func (w *Worker) waiting(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		err := next(ctx, j)
		var rcv errReceiver
		var busy errDeferred
		switch {
		case decided(err):
			return err
		case errors.As(err, &busy):
			return Settle(w.deferDelivery(ctx, j, busy.error))
		case errors.As(err, &rcv):
			return Settle(w.waitForReceiver(ctx, j, rcv.error))
		case runtime.IsUnavailable(err):
			return Settle(w.waitForRuntime(ctx, j, err))
		}
		return err
	}
}

// waitForRuntime answers a runtime that could not be reached: the
// operation is sent again as a fresh message after a capped exponential
// backoff, spending no attempt, until UnavailableRetryFor has passed since
// the runtime was first found unavailable; then the instance is failed.
func (w *Worker) waitForRuntime(ctx context.Context, j *Job, cause error) Result {
	log, msg := j.Log, j.Msg
	now := w.now()
	u, waited := continueWait(msg, now, j.Attempt-1)
	if waited >= w.unavailFor {
		// The instance's owner reads the reason: the runtime's summary, not
		// its client's message (a socket, an address), which is logged.
		log.ErrorContext(ctx, "runtime unavailable; giving up", "error", cause, "unavailable_since", u.Since)
		err := fmt.Errorf("runtime unavailable for %s: %s", waited.Truncate(time.Second), runtime.Summary(cause))
		w.fail(ctx, log, msg, j.Attempt, err)
		w.metrics.Count("UnavailableGaveUp", 1, "Op", string(msg.Op))
		return ack("failed: " + err.Error())
	}
	if err := w.store.MarkAttempt(ctx, msg.OutboxID, u.PriorAttempts, cause.Error(), now); err != nil {
		log.WarnContext(ctx, "recording the runtime's unavailability", "error", err)
	}
	res, requeued := w.resend(ctx, log, msg, u, "u", "retry: runtime unavailable: "+cause.Error())
	if requeued {
		w.metrics.Count("UnavailableRetries", 1, "Op", string(msg.Op))
		log.WarnContext(ctx, "runtime unavailable; will retry", "error", cause, "retry_in_ms", res.Delay.Milliseconds(),
			"unavailable_since", u.Since, "message_id", j.Delivery.MessageID)
	}
	return res
}

// waitForReceiver answers a failed delivery attempt: it is sent again as a
// fresh delayed message, so that no number of attempts dead-letters it
// before DeliveryRetryFor; then its outbox item is failed with the last
// error, which is the delivery's dead letter.
func (w *Worker) waitForReceiver(ctx context.Context, j *Job, cause error) Result {
	log, msg := j.Log, j.Msg
	now := w.now()
	u, waited := continueWait(msg, now, 0)
	if waited >= w.deliverFor {
		reason := fmt.Sprintf("gave up after %d attempts over %s: %v", u.Retries, waited.Truncate(time.Second), cause)
		if ferr := w.store.MarkFailed(ctx, msg.OutboxID, u.Retries, reason, now); ferr != nil {
			log.WarnContext(ctx, "recording the failed delivery", "error", ferr)
		}
		w.metrics.Count("DeadLettered", 1, "Op", string(msg.Op))
		log.ErrorContext(ctx, "webhook delivery given up", "error", cause, "attempts", u.Retries)
		return ack("failed: " + reason)
	}
	if merr := w.store.MarkAttempt(ctx, msg.OutboxID, u.Retries, cause.Error(), now); merr != nil {
		log.WarnContext(ctx, "recording the delivery attempt", "error", merr)
	}
	res, requeued := w.resend(ctx, log, msg, u, "r", "retry: "+cause.Error())
	if requeued {
		w.metrics.Count("WebhookRetries", 1)
		log.WarnContext(ctx, "webhook delivery failed; will retry", "error", cause, "retry_in_ms", res.Delay.Milliseconds(),
			"failing_since", u.Since, "message_id", j.Delivery.MessageID)
	}
	return res
}
