package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
)

// RequeueDispatched moves every dispatched (handed to a queue, not yet done
// or failed) outbox item back to pending, and returns how many it moved.
//
// The local server calls it at start: its in-process queues died with the
// last process, taking those items' messages with them, so the items must
// be dispatched again. A durable queue (SQS) never needs this. An item that
// was in fact finished by a worker whose MarkDone was lost is dropped by the
// worker as a duplicate when it comes round again.
func (s *Store) RequeueDispatched(ctx context.Context) (int, error) {
	n := 0
	err := s.update(ctx, "requeue dispatched outbox items", func(tx *bolt.Tx) error {
		n = 0
		var items []container.OutboxItem
		err := tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			var ob container.OutboxItem
			if err := json.Unmarshal(v, &ob); err != nil {
				return fmt.Errorf("decode outbox item %s: %w", k, err)
			}
			if ob.State == container.OutboxDispatched {
				items = append(items, ob)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, ob := range items {
			ob.State, ob.DispatchedAt = container.OutboxPending, nil
			if err := saveOutbox(tx, ob, container.OutboxDispatched); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
