package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// bucketWebhookIdx lists each subscription's deliveries: key webhook id
// 0x00 created_at (timeBytes) id, so that a reverse walk of one prefix is
// its listing, newest first. An item's CreatedAt never changes, so its key
// is written once, with the item, and removed when the item expires.
var bucketWebhookIdx = []byte("idx_webhook")

// webhookIdxKey is ob's key in idx_webhook.
func webhookIdxKey(ob container.OutboxItem) []byte {
	return append(prefixKey(ob.Delivery.WebhookID), undispatchedKey(ob.CreatedAt, ob.ID)...)
}

// indexDelivery adds a new item to idx_webhook when it is a listed one.
func indexDelivery(tx *bolt.Tx, ob container.OutboxItem) error {
	if !store.Listed(ob) {
		return nil
	}
	if err := tx.Bucket(bucketWebhookIdx).Put(webhookIdxKey(ob), nil); err != nil {
		return fmt.Errorf("webhook index of outbox %s: %w", ob.ID, err)
	}
	return nil
}

// unindexDelivery removes an expired item from idx_webhook.
func unindexDelivery(tx *bolt.Tx, ob container.OutboxItem) error {
	if !store.Listed(ob) {
		return nil
	}
	if err := tx.Bucket(bucketWebhookIdx).Delete(webhookIdxKey(ob)); err != nil {
		return fmt.Errorf("unindex expired delivery %s: %w", ob.ID, err)
	}
	return nil
}

// indexDeliveries puts every listed item of the outbox into idx_webhook:
// the one-time build of the index for an older file.
func indexDeliveries(tx *bolt.Tx) error {
	return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
		var ob container.OutboxItem
		if err := json.Unmarshal(v, &ob); err != nil {
			return fmt.Errorf("decode outbox item %s: %w", k, err)
		}
		return indexDelivery(tx, ob)
	})
}

// ListDeliveries walks the subscription's idx_webhook prefix backwards
// from the cursor (the key of the last item returned).
func (s *Store) ListDeliveries(ctx context.Context, webhookID, cursor string, limit int) (store.Page[container.OutboxItem], error) {
	var page store.Page[container.OutboxItem]
	prefix := prefixKey(webhookID)
	pos, err := decodeCursor(cursorDeliveries, cursor)
	if err != nil {
		return page, err
	}
	if pos == nil {
		pos = afterPrefix(prefix)
	} else if !bytes.HasPrefix(pos, prefix) {
		return page, fmt.Errorf("%w: %q is not a cursor of this subscription's deliveries", ErrInvalidCursor, cursor)
	}
	limit = pageLimit(limit)
	now := s.now()
	err = s.view(ctx, "list deliveries of "+webhookID, func(tx *bolt.Tx) error {
		items := tx.Bucket(bucketOutbox)
		c := tx.Bucket(bucketWebhookIdx).Cursor()
		// Seek lands on pos or the first key after it (nil past the
		// end); the entry before that is the first one below pos.
		k, _ := c.Seek(pos)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(page.Items) == limit {
				page.NextCursor = encodeCursor(cursorDeliveries, webhookIdxKey(page.Items[limit-1]))
				return nil
			}
			var ob container.OutboxItem
			found, err := getJSON(items, k[len(prefix)+8:], &ob)
			if err != nil {
				return err
			}
			if found && !store.OutboxExpired(ob, now) {
				page.Items = append(page.Items, ob)
			}
		}
		return nil
	})
	if err != nil {
		return store.Page[container.OutboxItem]{}, err
	}
	return page, nil
}

// RedeliverOutbox makes a finished item pending again.
func (s *Store) RedeliverOutbox(ctx context.Context, id string, at time.Time) (container.OutboxItem, error) {
	if at.IsZero() {
		at = s.now()
	}
	var out container.OutboxItem
	err := s.update(ctx, "redeliver "+id, func(tx *bolt.Tx) error {
		ob, err := mustLoadOutbox(tx, id, s.now())
		if err != nil {
			return err
		}
		next, changed := store.Redeliver(ob, at)
		out = next
		if !changed {
			return nil
		}
		if err := saveOutbox(tx, next, ob.State); err != nil {
			return err
		}
		// Its expiry as a pending item, which a purge checks again
		// against the item as stored before it removes anything.
		return putExpiry(tx, store.OutboxExpiresAt(next), expireOutbox, []byte(next.ID))
	})
	if err != nil {
		return container.OutboxItem{}, err
	}
	return out, nil
}
