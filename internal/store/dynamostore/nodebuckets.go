package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/store"
)

// ListActiveInBucket queries the sparse by_node_bucket index on one
// bucket, in ID order: the bucket's active instances and nothing else.
// Like every GSI read it is eventually consistent: an instance placed a
// moment ago may still be listed in its old bucket for that moment.
func (s *Store) ListActiveInBucket(ctx context.Context, bucket int, cur string, limit int) (store.Page[container.Instance], error) {
	const op = "list active in bucket"
	if bucket < 0 || bucket >= fleetshard.Buckets {
		return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s: bucket %d is outside 0..%d: %w",
			op, bucket, fleetshard.Buckets-1, store.ErrInvalidParams)
	}
	c, err := decodeCursor(cur, cursorBucket)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	if cur != "" && c.Index != bucket {
		return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: cursor %q: %w: issued for bucket %d, used for %d",
			cur, store.ErrInvalidCursor, c.Index, bucket)
	}
	key := strconv.Itoa(bucket)
	e := newExpr()
	keyCond := e.n(AttrNodeBucket) + " = " + e.s(key)
	var start map[string]types.AttributeValue
	if c.ID != "" {
		start = map[string]types.AttributeValue{AttrID: strAV(c.ID), AttrNodeBucket: strAV(key)}
	}
	items, more, err := collect(ctx, s.queryIndex(op, IndexByNodeBucket, keyCond, "", e), start, pageLimit(limit), false)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return s.instancePage(op, items, more, func(last container.Instance) cursor {
		return cursor{Kind: cursorBucket, Index: bucket, ID: last.ID}
	})
}
