package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// PurgeStats counts what one Purge removed.
type PurgeStats struct {
	DeletedInstances int // deletion markers whose events were removed
	Events           int
	OutboxItems      int
	IdempotencyKeys  int
}

// purgeBatch bounds one purge transaction, so a large backlog never holds
// the single writer lock (and the file's dirty pages) for long.
const purgeBatch = 1000

// Purge physically removes what expired at or before now: events and
// deletion markers of instances deleted more than store.EventRetention ago,
// outbox items past store.OutboxExpiresAt and idempotency records
// older than store.IdempotencyRetention. Reads already hide all of these, so
// Purge only reclaims space; the local server calls it from its ticker. It
// reads only the expiry list up to now, never the data buckets, and re-checks
// each record, so an entry made stale by a later write removes nothing live.
func (s *Store) Purge(ctx context.Context, now time.Time) (PurgeStats, error) {
	var total PurgeStats
	limit := timeBytes(now)
	for {
		var done int
		err := s.update(ctx, "purge", func(tx *bolt.Tx) error {
			var keys [][]byte
			c := tx.Bucket(bucketExpiry).Cursor()
			for k, _ := c.First(); k != nil && len(keys) < purgeBatch; k, _ = c.Next() {
				if bytes.Compare(k[:8], limit) > 0 {
					break
				}
				keys = append(keys, bytes.Clone(k))
			}
			var st PurgeStats
			for _, k := range keys {
				if err := purgeOne(tx, k[8], k[9:], now, &st); err != nil {
					return err
				}
				if err := tx.Bucket(bucketExpiry).Delete(k); err != nil {
					return fmt.Errorf("drop expiry entry: %w", err)
				}
			}
			done = len(keys)
			total.DeletedInstances += st.DeletedInstances
			total.Events += st.Events
			total.OutboxItems += st.OutboxItems
			total.IdempotencyKeys += st.IdempotencyKeys
			return nil
		})
		if err != nil {
			return total, err
		}
		if done < purgeBatch {
			return total, nil
		}
	}
}

func purgeOne(tx *bolt.Tx, kind byte, ref []byte, now time.Time, st *PurgeStats) error {
	switch kind {
	case expireEvents:
		var mark deletionRecord
		found, err := getJSON(tx.Bucket(bucketDeleted), ref, &mark)
		if err != nil || !found || now.Before(mark.expiresAt()) {
			return err
		}
		n, err := deletePrefix(tx.Bucket(bucketEvents), prefixKey(string(ref)))
		if err != nil {
			return err
		}
		st.Events += n
		st.DeletedInstances++
		return tx.Bucket(bucketDeleted).Delete(ref)
	case expireOutbox:
		var ob container.OutboxItem
		found, err := getJSON(tx.Bucket(bucketOutbox), ref, &ob)
		if err != nil || !found || !store.OutboxExpired(ob, now) {
			return err
		}
		st.OutboxItems++
		if err := tx.Bucket(bucketUndispatched).Delete(undispatchedKey(ob.CreatedAt, ob.ID)); err != nil {
			return fmt.Errorf("unindex expired outbox %s: %w", ob.ID, err)
		}
		if err := tx.Bucket(bucketDispatched).Delete(ref); err != nil {
			return fmt.Errorf("unindex expired outbox %s: %w", ob.ID, err)
		}
		if err := unindexDelivery(tx, ob); err != nil {
			return err
		}
		return tx.Bucket(bucketOutbox).Delete(ref)
	case expireIdempotency:
		var rec store.IdempotencyRecord
		found, err := getJSON(tx.Bucket(bucketIdempotency), ref, &rec)
		if err != nil || !found || now.Before(idempotencyExpiresAt(rec)) {
			return err
		}
		st.IdempotencyKeys++
		return tx.Bucket(bucketIdempotency).Delete(ref)
	}
	return nil // an unknown kind: drop the entry only
}

func deletePrefix(b *bolt.Bucket, prefix []byte) (int, error) {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, fmt.Errorf("delete %q: %w", k, err)
		}
	}
	return len(keys), nil
}
