package manager

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ListDeliveries returns a page of one subscription's deliveries, newest
// first (store.DeliveryStore.ListDeliveries): the caller's own
// subscription, or any for an admin; another owner's is ErrNotFound.
func (m *Manager) ListDeliveries(ctx context.Context, c identity.Caller, webhookID, cursor string, limit int) (store.Page[container.OutboxItem], error) {
	if _, err := m.GetWebhook(ctx, c, webhookID); err != nil {
		return store.Page[container.OutboxItem]{}, err
	}
	page, err := m.store.ListDeliveries(ctx, webhookID, cursor, limit)
	if err != nil {
		return store.Page[container.OutboxItem]{}, fmt.Errorf("listing deliveries of webhook %s: %w", webhookID, err)
	}
	return page, nil
}

// Redeliver sends one delivery of the caller's subscription again, under
// the same webhook-id: a delivered or failed one is queued once more; one
// still pending is left as it is, so asking twice sends once. A delivery
// of another subscription, or one that expired, is ErrNotFound.
func (m *Manager) Redeliver(ctx context.Context, c identity.Caller, webhookID, deliveryID string) (container.OutboxItem, error) {
	if _, err := m.GetWebhook(ctx, c, webhookID); err != nil {
		return container.OutboxItem{}, err
	}
	ob, err := m.store.GetOutbox(ctx, deliveryID)
	if err != nil {
		return container.OutboxItem{}, fmt.Errorf("delivery %s: %w", deliveryID, err)
	}
	if !store.Listed(ob) || ob.Delivery.WebhookID != webhookID {
		return container.OutboxItem{}, fmt.Errorf("delivery %s of webhook %s: %w", deliveryID, webhookID, ErrNotFound)
	}
	before := ob.State
	ob, err = m.store.RedeliverOutbox(ctx, deliveryID, m.now())
	if err != nil {
		return container.OutboxItem{}, fmt.Errorf("redelivering %s: %w", deliveryID, err)
	}
	m.log.InfoContext(ctx, "webhook redelivery", "webhook_id", webhookID, "delivery_id", deliveryID, "user", c.User,
		"was", before, "state", ob.State)
	return ob, nil
}
