package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
)

// Deliverer makes one attempt at a webhook delivery (a container.OpDeliver
// outbox item): nil when the receiver took it; an error matching
// store.ErrNotFound when its subscription is gone; any other error is a
// failed attempt, retried. webhook.Deliverer is one.
type Deliverer interface {
	Deliver(ctx context.Context, item container.OutboxItem) error
}

// DefaultDeliveryRetryFor is how long a webhook delivery is retried (with
// capped exponential backoff, up to queue.MaxDelay between attempts) before
// it is given up: its outbox item failed, with the last error, which is
// the delivery's dead letter. Receivers are often down for a night; 48 h
// outlasts a weekend's first day, as webhook senders commonly do.
const DefaultDeliveryRetryFor = 48 * time.Hour

// processDelivery handles an OpDeliver item. A failed attempt is sent
// again as a fresh delayed message (like a wait for an unavailable runtime)
// so that no number of attempts dead-letters it before DeliveryRetryFor;
// each delivery is its own message, so a receiver that fails costs its own
// subscription's deliveries only.
func (w *Worker) processDelivery(ctx context.Context, log *slog.Logger, msg outbox.Message, d queue.Delivery,
	item container.OutboxItem) Result {
	log = log.With("webhook_id", deliveryWebhook(item))
	deliverer, what := w.deliverer, "webhook"
	if deliveryWebhook(item) == container.EventBusTarget {
		deliverer, what = w.eventBus, "event bus"
	}
	var err error
	if deliverer == nil {
		err = errors.New("this worker has no " + what + " deliverer")
	} else {
		err = deliverer.Deliver(ctx, item)
	}
	switch {
	case err == nil:
		w.markDone(ctx, log, msg.OutboxID)
		w.metrics.Count("WebhookDelivered", 1)
		log.InfoContext(ctx, "webhook delivered")
		return ack("done")
	case errors.Is(err, store.ErrNotFound):
		w.markDone(ctx, log, msg.OutboxID)
		log.InfoContext(ctx, "webhook subscription gone; delivery dropped")
		return ack("stale: subscription gone")
	}
	now := w.now()
	u, waited := continueWait(msg, now, 0)
	if waited >= w.deliverFor {
		reason := fmt.Sprintf("gave up after %d attempts over %s: %v", u.Retries, waited.Truncate(time.Second), err)
		if ferr := w.store.MarkFailed(ctx, msg.OutboxID, u.Retries, reason, now); ferr != nil {
			log.WarnContext(ctx, "recording the failed delivery", "error", ferr)
		}
		w.metrics.Count("DeadLettered", 1, "Op", string(msg.Op))
		log.ErrorContext(ctx, "webhook delivery given up", "error", err, "attempts", u.Retries)
		return ack("failed: " + reason)
	}
	if merr := w.store.MarkAttempt(ctx, msg.OutboxID, u.Retries, err.Error(), now); merr != nil {
		log.WarnContext(ctx, "recording the delivery attempt", "error", merr)
	}
	res, requeued := w.resend(ctx, log, msg, u, "r", "retry: "+err.Error())
	if requeued {
		w.metrics.Count("WebhookRetries", 1)
		log.WarnContext(ctx, "webhook delivery failed; will retry", "error", err, "retry_in_ms", res.Delay.Milliseconds(),
			"failing_since", u.Since, "message_id", d.MessageID)
	}
	return res
}

func deliveryWebhook(item container.OutboxItem) string {
	if item.Delivery == nil {
		return ""
	}
	return item.Delivery.WebhookID
}
