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

// bucketDeadlineIdx indexes the instances that have a deadline
// (container.Instance.Deadline) by it: deadlineIdxKey → nothing.
var bucketDeadlineIdx = []byte("idx_deadline")

// deadlineLayout writes a deadline at a fixed width, so keys sort by time.
const deadlineLayout = "2006-01-02T15:04:05.000000000Z"

// deadlineIdxKey is an instance's idx_deadline key.
func deadlineIdxKey(at time.Time, id string) []byte {
	return joinKey(at.UTC().Format(deadlineLayout), id)
}

// moveDeadline keeps idx_deadline in step with a write that takes an
// instance from prior to next (either nil: created, removed).
func moveDeadline(tx *bolt.Tx, prior, next *container.Instance) error {
	var from, to []byte
	if prior != nil && prior.Deadline() != nil {
		from = deadlineIdxKey(*prior.Deadline(), prior.ID)
	}
	if next != nil && next.Deadline() != nil {
		to = deadlineIdxKey(*next.Deadline(), next.ID)
	}
	if bytes.Equal(from, to) {
		return nil
	}
	idx := tx.Bucket(bucketDeadlineIdx)
	if from != nil {
		if err := idx.Delete(from); err != nil {
			return fmt.Errorf("unindex deadline of %s: %w", prior.ID, err)
		}
	}
	if to != nil {
		if err := idx.Put(to, nil); err != nil {
			return fmt.Errorf("index deadline of %s: %w", next.ID, err)
		}
	}
	return nil
}

// indexDeadlines builds idx_deadline from the instances: the one-time
// build of the index for a file written before it existed.
func indexDeadlines(tx *bolt.Tx) error {
	return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
		var rec instanceRecord
		if err := decodeJSON(k, v, &rec); err != nil {
			return err
		}
		in := rec.instance()
		return moveDeadline(tx, nil, &in)
	})
}

// ListDeadlines walks idx_deadline from the start (or after the cursor's
// key) up to until, loading each instance: only the instances due by then
// are read.
func (s *Store) ListDeadlines(ctx context.Context, until time.Time, cursor string, limit int) (store.Page[container.Instance], error) {
	var page store.Page[container.Instance]
	after, err := decodeCursor(cursorDeadlines, cursor)
	if err != nil {
		return page, err
	}
	limit = pageLimit(limit)
	upTo := afterPrefix(prefixKey(until.UTC().Format(deadlineLayout)))
	err = s.view(ctx, "list deadlines", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDeadlineIdx).Cursor()
		var lastKey []byte
		for k, _ := first(c, after); k != nil && bytes.Compare(k, upTo) < 0; k, _ = c.Next() {
			if len(page.Items) == limit {
				page.NextCursor = encodeCursor(cursorDeadlines, lastKey)
				return nil
			}
			i := bytes.IndexByte(k, sep)
			in, found, err := loadInstance(tx, string(k[i+1:]))
			if err != nil {
				return err
			}
			if found {
				page.Items = append(page.Items, in)
				lastKey = bytes.Clone(k)
			}
		}
		return nil
	})
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return page, nil
}
