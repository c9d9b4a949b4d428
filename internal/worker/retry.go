package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/runtime"
)

// errPermanent marks failures no retry can mend although the runtime did not
// classify them (e.g. the container exited at once under a create).
var errPermanent = errors.New("permanent")

// errRetry marks a failure as worth another attempt whatever its kind (a
// store read that failed).
type errRetry struct{ error }

func (e errRetry) Unwrap() error { return e.error }

func retryable(err error) error { return errRetry{err} }

// retrying answers the failures another attempt may mend (the runtime's
// Retryable ones, unless errPermanent, and errRetry) with a redelivery
// after the backoff; the rest go on outward.
func (w *Worker) retrying(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		err := next(ctx, j)
		var marked errRetry
		if decided(err) || !errors.As(err, &marked) && (!runtime.Retryable(err) || errors.Is(err, errPermanent)) {
			return err
		}
		return Settle(w.retry(ctx, j.Log, j.Msg, j.Attempt, err))
	}
}

// retry records the attempt and asks for a redelivery after the backoff.
// The last attempt fails the instance and leaves the message unacknowledged
// so that the queue moves it to the dead-letter queue.
func (w *Worker) retry(ctx context.Context, log *slog.Logger, msg outbox.Message, attempt int, cause error) Result {
	if attempt >= w.maxAttempts {
		w.fail(ctx, log, msg, attempt, fmt.Errorf("gave up after %d attempts: %w", attempt, cause))
		w.metrics.Count("DeadLettered", 1, "Op", string(msg.Op))
		return Result{Ack: false, Delay: 0, Reason: "dead-letter: " + cause.Error()}
	}
	if err := w.store.MarkAttempt(ctx, msg.OutboxID, attempt, cause.Error(), w.now()); err != nil {
		log.WarnContext(ctx, "recording attempt", "error", err)
	}
	delay := w.backoff(attempt)
	w.metrics.Count("Retries", 1, "Op", string(msg.Op))
	log.WarnContext(ctx, "operation failed; will retry", "error", cause, "retry_in_ms", delay.Milliseconds())
	return Result{Ack: false, Delay: delay, Reason: "retry: " + cause.Error()}
}
