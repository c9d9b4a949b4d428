package boltstore

import (
	"bytes"
	"context"
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

// deadlineIdxKeyOf is in's idx_deadline key, nil when it has no deadline.
func deadlineIdxKeyOf(in *container.Instance) []byte {
	if in == nil || in.Deadline() == nil {
		return nil
	}
	return deadlineIdxKey(*in.Deadline(), in.ID)
}

// ListDeadlines walks idx_deadline from the start (or after the cursor's
// key) up to until, loading each instance: only the instances due by then
// are read.
func (s *Store) ListDeadlines(ctx context.Context, until time.Time, cursor string, limit int) (store.Page[container.Instance], error) {
	after, err := decodeCursor(cursorDeadlines, cursor)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	upTo := afterPrefix(prefixKey(until.UTC().Format(deadlineLayout)))
	var page store.Page[container.Instance]
	err = s.view(ctx, "list deadlines", func(tx *bolt.Tx) (err error) {
		page, err = deadlineIndex.page(tx, cursorDeadlines, after, pageLimit(limit),
			func(k []byte) bool { return bytes.Compare(k, upTo) < 0 },
			func(k []byte) string { return string(k[bytes.IndexByte(k, sep)+1:]) })
		return err
	})
	return page, err
}
