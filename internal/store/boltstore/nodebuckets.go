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

// ListActiveInBucket walks the bucket's range of idx_node_bucket from its
// start (or after the cursor's key), loading each instance: only the
// bucket's active instances are read.
func (s *Store) ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (store.Page[container.Instance], error) {
	if bucket < 0 || bucket >= fleetshard.Buckets {
		return store.Page[container.Instance]{}, fmt.Errorf("boltstore: bucket %d is outside 0..%d: %w", bucket, fleetshard.Buckets-1, store.ErrInvalidParams)
	}
	prefix := nodeBucketKey(bucket, "")
	after, err := decodeCursor(cursorNodeBucket, cursor)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	if after == nil {
		after = prefix // ids are never empty, so no key equals the prefix
	} else if !bytes.HasPrefix(after, prefix) {
		return store.Page[container.Instance]{}, fmt.Errorf("%w: %q is another bucket's", ErrInvalidCursor, cursor)
	}
	var page store.Page[container.Instance]
	err = s.view(ctx, "list active in bucket", func(tx *bolt.Tx) (err error) {
		page, err = nodeBucketIndex.page(tx, cursorNodeBucket, after, pageLimit(limit),
			func(k []byte) bool { return bytes.HasPrefix(k, prefix) },
			func(k []byte) string { return string(k[len(prefix):]) })
		return err
	})
	return page, err
}
