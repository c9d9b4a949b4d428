package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// keyWebhooks holds every webhook subscription (container.WebhookSet) in
// the meta bucket, one document as on DynamoDB.
var keyWebhooks = []byte("webhooks")

func webhookSet(tx *bolt.Tx) (container.WebhookSet, error) {
	var set container.WebhookSet
	_, err := getJSON(tx.Bucket(bucketMeta), keyWebhooks, &set)
	return set, err
}

// PutWebhook adds a subscription.
func (s *Store) PutWebhook(ctx context.Context, w container.Webhook) (container.Webhook, error) {
	var out container.Webhook
	err := s.update(ctx, "put webhook "+w.ID, func(tx *bolt.Tx) error {
		set, err := webhookSet(tx)
		if err != nil {
			return err
		}
		set, out, err = store.AddWebhook(set, w, s.now())
		if err != nil {
			return err
		}
		set.Version++
		return putJSON(tx.Bucket(bucketMeta), keyWebhooks, set)
	})
	if err != nil {
		return container.Webhook{}, err
	}
	return out, nil
}

// GetWebhook returns a subscription or store.ErrNotFound.
func (s *Store) GetWebhook(ctx context.Context, id string) (container.Webhook, error) {
	var out container.Webhook
	err := s.view(ctx, "get webhook "+id, func(tx *bolt.Tx) error {
		set, err := webhookSet(tx)
		if err != nil {
			return err
		}
		out, err = store.FindWebhook(set, id)
		return err
	})
	return out, err
}

// ListWebhooks returns owner's subscriptions (every one for "").
func (s *Store) ListWebhooks(ctx context.Context, owner string) ([]container.Webhook, error) {
	var out []container.Webhook
	err := s.view(ctx, "list webhooks", func(tx *bolt.Tx) error {
		set, err := webhookSet(tx)
		out = store.OwnedWebhooks(set, owner)
		return err
	})
	return out, err
}

// DeleteWebhook removes a subscription.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.update(ctx, "delete webhook "+id, func(tx *bolt.Tx) error {
		set, err := webhookSet(tx)
		if err != nil {
			return err
		}
		if set, err = store.RemoveWebhook(set, id); err != nil {
			return err
		}
		set.Version++
		return putJSON(tx.Bucket(bucketMeta), keyWebhooks, set)
	})
}
