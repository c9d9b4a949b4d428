package boltstore

import (
	"context"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// More expired records than one purge transaction takes: Purge must go on
// until the expiry list holds nothing due.
func TestPurgeRunsInBatches(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	const n = purgeBatch + 5
	err := s.update(ctx, "seed", func(tx *bolt.Tx) error {
		for i := range n {
			rec := store.IdempotencyRecord{Owner: "alice", Key: fmt.Sprint(i), CreatedAt: clock.Now()}
			if err := putIdempotency(tx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	live := store.IdempotencyRecord{Owner: "bob", Key: "k", CreatedAt: clock.Now().Add(store.IdempotencyRetention)}
	if _, err := s.PutIdempotency(ctx, live); err != nil {
		t.Fatal(err)
	}
	clock.Advance(store.IdempotencyRetention)
	st, err := s.Purge(ctx, clock.Now())
	if err != nil || st.IdempotencyKeys != n {
		t.Fatalf("purge = %+v, %v; want %d idempotency keys", st, err, n)
	}
	if _, err := s.GetIdempotency(ctx, "bob", "k"); err != nil {
		t.Fatalf("purge removed a live record: %v", err)
	}
	var left int
	_ = s.view(ctx, "count", func(tx *bolt.Tx) error {
		left = tx.Bucket(bucketExpiry).Stats().KeyN
		return nil
	})
	if left != 1 {
		t.Errorf("%d expiry entries left, want 1 (bob's)", left)
	}
}
