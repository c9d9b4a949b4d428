package store

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// DeliveryStore reads and re-sends a subscription's webhook deliveries:
// the OpDeliver outbox items whose Delivery.WebhookID names it. They live
// as long as outbox items do (OutboxExpiresAt), so a subscription's
// history covers at least the last OutboxRetention of finished ones.
type DeliveryStore interface {
	// ListDeliveries returns the live deliveries of one subscription,
	// newest first (by CreatedAt, then ID). limit is 1..100, 0 meaning 50.
	// Paging with NextCursor never repeats or skips a delivery that lives
	// for the whole walk. Event-bus deliveries (container.EventBusTarget)
	// are never listed.
	ListDeliveries(ctx context.Context, webhookID, cursor string, limit int) (Page[container.OutboxItem], error)
	// RedeliverOutbox sends a finished (done or failed) item again: it is
	// pending once more, with no attempts and no error, and expires as a
	// pending item does; its id (the webhook-id a receiver sees) and its
	// CreatedAt do not change. An item still pending or dispatched is left
	// as it is, so a repeat asks for one send only. It returns the item as
	// stored; ErrNotFound if there is none.
	RedeliverOutbox(ctx context.Context, id string, at time.Time) (container.OutboxItem, error)
}

// Listed reports whether a delivery item belongs to its subscription's
// listing (ListDeliveries): an OpDeliver item addressed to a subscription
// rather than to the event bus.
func Listed(ob container.OutboxItem) bool {
	return ob.Op == container.OpDeliver && ob.Delivery != nil && ob.Delivery.WebhookID != "" &&
		ob.Delivery.WebhookID != container.EventBusTarget
}

// Redeliver is the rule of RedeliverOutbox on an item as read: the item as
// it must be stored and true, or the item unchanged and false when it is
// still pending or dispatched.
func Redeliver(ob container.OutboxItem, at time.Time) (container.OutboxItem, bool) {
	if ob.State != container.OutboxDone && ob.State != container.OutboxFailed {
		return ob, false
	}
	ob.State, ob.Attempts, ob.LastError, ob.DispatchedAt, ob.UpdatedAt = container.OutboxPending, 0, "", nil, at.UTC()
	return ob, true
}
