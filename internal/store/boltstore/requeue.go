package boltstore

import (
	"bytes"
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
//
// It reads only the dispatched index, not the outbox: finished items stay
// for store.OutboxRetention, so the outbox of a busy store holds many more
// of them than are in flight, and a scan of it made start-up grow with the
// store.
func (s *Store) RequeueDispatched(ctx context.Context) (int, error) {
	n := 0
	err := s.update(ctx, "requeue dispatched outbox items", func(tx *bolt.Tx) error {
		n = 0
		var ids [][]byte
		c := tx.Bucket(bucketDispatched).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			ids = append(ids, bytes.Clone(k))
		}
		for _, id := range ids {
			var ob container.OutboxItem
			found, err := getJSON(tx.Bucket(bucketOutbox), id, &ob)
			if err != nil {
				return err
			}
			if !found || ob.State != container.OutboxDispatched {
				// Left by a build that did not keep the index.
				if err := tx.Bucket(bucketDispatched).Delete(id); err != nil {
					return fmt.Errorf("drop stale dispatched entry %s: %w", id, err)
				}
				continue
			}
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

// indexDispatched puts every dispatched item of the outbox into
// idx_dispatched: the one-time build of the index for an older file.
func indexDispatched(tx *bolt.Tx) error {
	idx := tx.Bucket(bucketDispatched)
	return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
		var ob container.OutboxItem
		if err := json.Unmarshal(v, &ob); err != nil {
			return fmt.Errorf("decode outbox item %s: %w", k, err)
		}
		if ob.State != container.OutboxDispatched {
			return nil
		}
		if err := idx.Put(bytes.Clone(k), nil); err != nil {
			return fmt.Errorf("index dispatched outbox %s: %w", k, err)
		}
		return nil
	})
}
