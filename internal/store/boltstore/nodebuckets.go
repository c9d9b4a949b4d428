package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/store"
)

// bucketNodeBucketIdx lists the active instances by their node's
// fleetshard bucket (store.NodeBucket): nodeBucketKey → nothing. An index
// rather than a filtered walk of idx_status, because a shard of the
// reconciler reads only its buckets: ten shards over 100,000 instances
// read 100,000 keys in all, where filtering would read a million.
var bucketNodeBucketIdx = []byte("idx_node_bucket")

// cursorNodeBucket: ListActiveInBucket.
const cursorNodeBucket byte = 'b'

// nodeBucketKey is the idx_node_bucket key: the bucket (2 bytes, big
// endian, so one bucket's keys are one range) then the id.
func nodeBucketKey(bucket int, id string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(bucket)), id...)
}

// nodeBucketIdxKey is in's idx_node_bucket key, nil when it is not listed.
func nodeBucketIdxKey(in *container.Instance) []byte {
	if in == nil {
		return nil
	}
	b, listed := store.NodeBucket(*in)
	if !listed {
		return nil
	}
	return nodeBucketKey(b, in.ID)
}

// moveNodeBucket keeps idx_node_bucket in step with a write that takes an
// instance from prior to next (either nil: created, removed).
func moveNodeBucket(tx *bolt.Tx, prior, next *container.Instance) error {
	from, to := nodeBucketIdxKey(prior), nodeBucketIdxKey(next)
	if bytes.Equal(from, to) {
		return nil
	}
	idx := tx.Bucket(bucketNodeBucketIdx)
	if from != nil {
		if err := idx.Delete(from); err != nil {
			return fmt.Errorf("unindex node bucket of %s: %w", prior.ID, err)
		}
	}
	if to != nil {
		if err := idx.Put(to, nil); err != nil {
			return fmt.Errorf("index node bucket of %s: %w", next.ID, err)
		}
	}
	return nil
}

// indexNodeBuckets builds idx_node_bucket from the instances: the one-time
// build of the index for a file written before it existed.
func indexNodeBuckets(tx *bolt.Tx) error {
	return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
		var rec instanceRecord
		if err := decodeJSON(k, v, &rec); err != nil {
			return err
		}
		in := rec.instance()
		return moveNodeBucket(tx, nil, &in)
	})
}

// ListActiveInBucket walks the bucket's range of idx_node_bucket from its
// start (or after the cursor's key), loading each instance: only the
// bucket's active instances are read.
func (s *Store) ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (store.Page[container.Instance], error) {
	var page store.Page[container.Instance]
	if bucket < 0 || bucket >= fleetshard.Buckets {
		return page, fmt.Errorf("boltstore: bucket %d is outside 0..%d: %w", bucket, fleetshard.Buckets-1, store.ErrInvalidParams)
	}
	prefix := nodeBucketKey(bucket, "")
	after, err := decodeCursor(cursorNodeBucket, cursor)
	if err != nil {
		return page, err
	}
	if after == nil {
		after = prefix // ids are never empty, so no key equals the prefix
	} else if !bytes.HasPrefix(after, prefix) {
		return page, fmt.Errorf("%w: %q is another bucket's", ErrInvalidCursor, cursor)
	}
	limit = pageLimit(limit)
	err = s.view(ctx, "list active in bucket", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketNodeBucketIdx).Cursor()
		var lastKey []byte
		for k, _ := first(c, after); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(page.Items) == limit {
				page.NextCursor = encodeCursor(cursorNodeBucket, lastKey)
				return nil
			}
			in, found, err := loadInstance(tx, string(k[len(prefix):]))
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
