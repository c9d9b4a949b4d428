package dynamostore

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// webhooksName is the counters item holding every webhook subscription
// (container.WebhookSet, its JSON in AttrDoc and its version in
// AttrLedgerVersion): one read gives a status change every subscription,
// and the item stays far below 400 KB (store.MaxWebhooks). Kept in the
// counters table, which every function may already read and write, so the
// stack needs no new table or permission for it.
const webhooksName = "webhooks"

// webhookSet reads the set as stored (a zero one when none is).
func (s *Store) webhookSet(ctx context.Context, op string) (container.WebhookSet, error) {
	var set container.WebhookSet
	err := s.getDoc(ctx, op, webhooksName, &set)
	return set, err
}

// changeWebhooks applies change to the set as read and writes the result
// conditioned on the version read, reading again after a lost race.
func (s *Store) changeWebhooks(ctx context.Context, op string, change func(container.WebhookSet) (container.WebhookSet, error)) error {
	return changeDoc(ctx, s, op, webhooksName, "webhooks",
		func(set *container.WebhookSet) *int64 { return &set.Version },
		func(set *container.WebhookSet) error {
			next, err := change(*set)
			*set = next
			return err
		})
}

// PutWebhook adds a subscription.
func (s *Store) PutWebhook(ctx context.Context, w container.Webhook) (container.Webhook, error) {
	var out container.Webhook
	err := s.changeWebhooks(ctx, "put webhook "+w.ID, func(set container.WebhookSet) (container.WebhookSet, error) {
		next, stored, err := store.AddWebhook(set, w, s.now())
		out = stored
		return next, err
	})
	if err != nil {
		return container.Webhook{}, err
	}
	return out, nil
}

// GetWebhook returns a subscription or store.ErrNotFound.
func (s *Store) GetWebhook(ctx context.Context, id string) (container.Webhook, error) {
	set, err := s.webhookSet(ctx, "get webhook")
	if err != nil {
		return container.Webhook{}, err
	}
	w, err := store.FindWebhook(set, id)
	if err != nil {
		return container.Webhook{}, fmt.Errorf("dynamostore: %w", err)
	}
	return w, nil
}

// ListWebhooks returns owner's subscriptions (every one for "").
func (s *Store) ListWebhooks(ctx context.Context, owner string) ([]container.Webhook, error) {
	set, err := s.webhookSet(ctx, "list webhooks")
	if err != nil {
		return nil, err
	}
	return store.OwnedWebhooks(set, owner), nil
}

// DeleteWebhook removes a subscription.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.changeWebhooks(ctx, "delete webhook "+id, func(set container.WebhookSet) (container.WebhookSet, error) {
		return store.RemoveWebhook(set, id)
	})
}

// roleDelivery names a transition's webhook delivery items
// (store.TransitionParams.Deliveries) in its transaction.
const roleDelivery = "delivery"
