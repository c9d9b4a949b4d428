package dynamostore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// cursorDeadlines is ListDeadlines' cursor kind: Shard-th shard, after the
// deadline_key in ID.
const cursorDeadlines = "deadlines"

// ListDeadlines queries the sparse by_deadline index shard by shard, each
// up to until's key: IndexShards queries of the instances due by then and
// nothing else, however many instances are kept.
func (s *Store) ListDeadlines(ctx context.Context, until time.Time, cur string, limit int) (store.Page[container.Instance], error) {
	const op = "list deadlines"
	c, err := decodeCursor(cur, cursorDeadlines)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	limit = pageLimit(limit)
	// Every key of a deadline at until sorts below this one ('#' < '$').
	upTo := fmtTime(until) + "$"
	page := store.Page[container.Instance]{Items: []container.Instance{}}
	last := cursor{Kind: cursorDeadlines, Shard: -1}
	for n := c.Shard; n < IndexShards; n++ {
		shard := shardKey("deadline", n)
		var start map[string]types.AttributeValue
		if n == c.Shard && c.ID != "" {
			start = map[string]types.AttributeValue{AttrDeadlineShard: strAV(shard), AttrDeadlineKey: strAV(c.ID), AttrID: strAV(idOfKey(c.ID))}
		}
		e := newExpr()
		keyCond := e.n(AttrDeadlineShard) + " = " + e.s(shard) + " AND " + e.n(AttrDeadlineKey) + " < " + e.s(upTo)
		items, more, err := collect(ctx, s.queryIndex(op, IndexByDeadline, keyCond, "", e), start, limit-len(page.Items), false)
		if err != nil {
			return store.Page[container.Instance]{}, err
		}
		for _, av := range items {
			in, err := unmarshalInstance(av)
			if err != nil {
				return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s %s: %w", op, s.instances, err)
			}
			page.Items = append(page.Items, in)
			last = cursor{Kind: cursorDeadlines, Shard: n, ID: deadlineKey(*in.Deadline(), in.ID)}
		}
		if more {
			if last.Shard < 0 { // unreachable: limit ≥ 1 makes collect return an item before "more"
				return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s: more items but none returned", op)
			}
			page.NextCursor = last.encode()
			return page, nil
		}
	}
	return page, nil
}

// idOfKey is the instance id a deadline_key ends with.
func idOfKey(key string) string { return key[strings.LastIndexByte(key, '#')+1:] }
