package worker

import (
	"context"
	"errors"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// Deliverer makes one attempt at a webhook delivery (a container.OpDeliver
// outbox item): nil when the receiver took it; an error matching
// store.ErrNotFound when its subscription is gone; an error with a
// Deferred() bool method answering true when it was not attempted because
// its subscription's owner has its share of deliveries in flight (put off,
// spending no retry: defer.go); any other error is a failed attempt,
// retried. webhook.Deliverer is one.
type Deliverer interface {
	Deliver(ctx context.Context, item container.OutboxItem) error
}

// DefaultDeliveryRetryFor is how long a webhook delivery is retried (with
// capped exponential backoff, up to queue.MaxDelay between attempts) before
// it is given up: its outbox item failed, with the last error, which is
// the delivery's dead letter. Receivers are often down for a night; 48 h
// outlasts a weekend's first day, as webhook senders commonly do.
const DefaultDeliveryRetryFor = 48 * time.Hour

// deliver is OpDeliver's handler: one attempt at the delivery. A failed
// attempt (errReceiver) is waited out (waiting), never dead-lettered by a
// number of receives; each delivery is its own message, so a receiver that
// fails costs its own subscription's deliveries only.
func (w *Worker) deliver(ctx context.Context, j *Job) error {
	j.Log = j.Log.With("webhook_id", deliveryWebhook(j.Item))
	deliverer, what := w.deliverer, "webhook"
	if deliveryWebhook(j.Item) == container.EventBusTarget {
		deliverer, what = w.eventBus, "event bus"
	}
	if deliverer == nil {
		return errReceiver{errors.New("this worker has no " + what + " deliverer")}
	}
	switch err := deliverer.Deliver(ctx, j.Item); {
	case err == nil:
		// Operators and the emulator's tests read who delivered from
		// this line (finish logs every operation's end besides).
		j.Log.InfoContext(ctx, "webhook delivered")
		return nil
	case isDeferred(err):
		return errDeferred{err}
	case errors.Is(err, store.ErrNotFound):
		j.Log.InfoContext(ctx, "webhook subscription gone; delivery dropped")
		return stale("subscription gone")
	default:
		return errReceiver{err}
	}
}

func deliveryWebhook(item container.OutboxItem) string {
	if item.Delivery == nil {
		return ""
	}
	return item.Delivery.WebhookID
}
