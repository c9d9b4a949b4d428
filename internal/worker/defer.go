package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Deliveries put off because their subscription's owner has its share in
// flight (webhook.Limiter) wait DefaultDeferBase, doubling per deferral up
// to DefaultDeferMax, with jitter: short enough that a freed slot is soon
// used, long enough that one owner's backlog does not spin the queue.
const (
	// DefaultDeferBase is the first deferral's delay. Defaults to 1 s.
	DefaultDeferBase = time.Second
	// DefaultDeferMax caps a deferral's delay: about two deliveries'
	// bound (webhook.DefaultTimeout). Defaults to 30 s.
	DefaultDeferMax = 30 * time.Second
)

// errDeferred is a delivery not attempted (its Deliverer's error says why).
type errDeferred struct{ error }

func (e errDeferred) Unwrap() error { return e.error }

// isDeferred reports a Deliverer's error saying that the delivery was put
// off, not attempted.
func isDeferred(err error) bool {
	var d interface{ Deferred() bool }
	return errors.As(err, &d) && d.Deferred()
}

// deferDelivery sends the delivery again as a fresh message after the
// deferral delay, spending no retry and recording no attempt: its
// receiver was never called, and the other owners' deliveries go first.
func (w *Worker) deferDelivery(ctx context.Context, j *Job, cause error) Result {
	msg := j.Msg
	next := msg
	next.Deferrals++
	shift := min(next.Deferrals-1, 5)
	delay := min(DefaultDeferBase<<shift, DefaultDeferMax)
	delay += time.Duration(rand.Int64N(int64(delay/2) + 1))
	res := Result{Delay: delay, Reason: "deferred: " + cause.Error()}
	out, err := next.Outgoing(fmt.Sprintf("%s-d%d", msg.OutboxID, next.Deferrals), delay)
	if err != nil {
		j.Log.WarnContext(ctx, "cannot re-send; the queue redelivers it", "error", err)
		return res
	}
	res.Requeue = &out
	w.metrics.Count("WebhookDeferrals", 1)
	j.Log.DebugContext(ctx, "webhook delivery deferred", "reason", cause, "retry_in_ms", delay.Milliseconds())
	return res
}
