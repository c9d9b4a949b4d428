package worker

import (
	"context"

	"github.com/berth-io/berth/internal/container"
)

// measure emits a delivery's metrics: how long it waited in the queue and,
// on its first receive, since its commit; and, for an operation done, how
// long it took (the duplicate check's read included) or, for a delivery,
// that it was delivered.
func (w *Worker) measure(next Handler) Handler {
	return func(ctx context.Context, j *Job) error {
		op, d := j.Msg.Op, j.Delivery
		if !d.SentAt.IsZero() {
			w.metrics.Duration("QueueAge", w.now().Sub(d.SentAt), "Op", string(op))
		}
		if d.ReceiveCount == 1 && !j.Msg.CommittedAt.IsZero() {
			w.metrics.Duration("DispatchLatency", w.now().Sub(j.Msg.CommittedAt), "Op", string(op), "Stage", "worker")
		}
		start := w.now()
		err := next(ctx, j)
		if err == nil {
			if op == container.OpDeliver {
				w.metrics.Count("WebhookDelivered", 1)
			} else {
				w.metrics.Duration(opMetric(op), w.now().Sub(start))
			}
		}
		return err
	}
}

func opMetric(op container.Op) string {
	switch op {
	case container.OpCreate:
		return "CreateDuration"
	case container.OpStart:
		return "StartDuration"
	case container.OpStop:
		return "StopDuration"
	case container.OpCleanupStop, container.OpCleanupDelete, container.OpGroupStop, container.OpGroupDelete:
		return "CleanupDuration"
	case container.OpPause, container.OpResume:
		return "PauseDuration"
	}
	return "DeleteDuration"
}
