package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// PutIdempotency stores rec unless (Owner, Key) has a live record; then it
// returns that one with ErrAlreadyExists. An expired record is replaced.
// A zero CreatedAt is set to the store's clock, since liveness counts from it.
func (s *Store) PutIdempotency(ctx context.Context, rec store.IdempotencyRecord) (store.IdempotencyRecord, error) {
	var existing store.IdempotencyRecord
	var live bool
	err := s.update(ctx, fmt.Sprintf("put idempotency %q/%q", rec.Owner, rec.Key), func(tx *bolt.Tx) error {
		now := s.now()
		var err error
		if existing, live, err = liveIdempotency(tx, rec.Owner, rec.Key, now); err != nil || live {
			return err
		}
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = now
		}
		return putIdempotency(tx, rec)
	})
	switch {
	case err != nil:
		return store.IdempotencyRecord{}, err
	case live:
		return existing, fmt.Errorf("boltstore: idempotency %q/%q: %w", rec.Owner, rec.Key, store.ErrAlreadyExists)
	}
	return rec, nil
}

// GetIdempotency returns the live record or ErrNotFound (also when expired
// and not purged yet).
func (s *Store) GetIdempotency(ctx context.Context, owner, key string) (store.IdempotencyRecord, error) {
	var rec store.IdempotencyRecord
	err := s.view(ctx, fmt.Sprintf("get idempotency %q/%q", owner, key), func(tx *bolt.Tx) error {
		var live bool
		var err error
		if rec, live, err = liveIdempotency(tx, owner, key, s.now()); err == nil && !live {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.IdempotencyRecord{}, err
	}
	return rec, nil
}

func idempotencyExpiresAt(rec store.IdempotencyRecord) time.Time {
	return rec.CreatedAt.Add(store.IdempotencyRetention)
}

func liveIdempotency(tx *bolt.Tx, owner, key string, now time.Time) (store.IdempotencyRecord, bool, error) {
	var rec store.IdempotencyRecord
	found, err := getJSON(tx.Bucket(bucketIdempotency), joinKey(owner, key), &rec)
	if err != nil || !found {
		return store.IdempotencyRecord{}, false, err
	}
	return rec, now.Before(idempotencyExpiresAt(rec)), nil
}

func putIdempotency(tx *bolt.Tx, rec store.IdempotencyRecord) error {
	k := joinKey(rec.Owner, rec.Key)
	if err := putJSON(tx.Bucket(bucketIdempotency), k, rec); err != nil {
		return err
	}
	return putExpiry(tx, idempotencyExpiresAt(rec), expireIdempotency, k)
}
