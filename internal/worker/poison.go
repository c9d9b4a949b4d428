package worker

import (
	"context"

	"github.com/berth-io/berth/internal/outbox"
)

// decode is the poison check: it decodes the delivery and gives the job its
// logger and attempt. An undecodable message is acknowledged and logged,
// since no retry can make it readable, and never panics the caller's loop.
func (w *Worker) decode(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		d := j.Delivery
		msg, err := outbox.Decode(d.Body)
		if err != nil {
			w.log.ErrorContext(ctx, "dropping undecodable message", "message_id", d.MessageID, "error", err)
			w.metrics.Count("PoisonMessages", 1)
			return Settle(ack("poison: " + err.Error()))
		}
		j.Msg = msg
		j.Log = w.log.With("request_id", msg.RequestID, "outbox_id", msg.OutboxID, "instance_id", msg.InstanceID,
			"op", string(msg.Op), "attempt", d.ReceiveCount)
		if msg.TraceContext != "" {
			j.Log = j.Log.With("trace", msg.TraceContext)
		}
		j.Attempt = max(d.ReceiveCount, 1) + msg.PriorAttempts()
		return next(ctx, j)
	}
}
