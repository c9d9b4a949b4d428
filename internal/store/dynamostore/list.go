package dynamostore

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// fetcher reads one DynamoDB page (Query or Scan) of at most limit
// evaluated items from start.
type fetcher func(ctx context.Context, start map[string]types.AttributeValue, limit int32) (items []map[string]types.AttributeValue, next map[string]types.AttributeValue, err error)

// filteredPage is how many items a filtered listing evaluates per request:
// DynamoDB applies Limit before the filter, so asking for exactly the rows
// still wanted would take one round trip per few matches.
const filteredPage = 100

// collect reads pages from start until it holds want+1 items or the source
// ends; it returns at most want items and whether more exist.
func collect(ctx context.Context, fetch fetcher, start map[string]types.AttributeValue, want int, filtered bool) ([]map[string]types.AttributeValue, bool, error) {
	var items []map[string]types.AttributeValue
	for {
		n := want + 1 - len(items)
		if filtered {
			n = max(n, filteredPage)
		}
		got, next, err := fetch(ctx, start, int32(n))
		if err != nil {
			return nil, false, err
		}
		items = append(items, got...)
		if len(items) > want {
			return items[:want], true, nil
		}
		if next == nil {
			return items, false, nil
		}
		start = next
	}
}

// ListInstances lists instances matching q. With Owner it queries by_owner
// (ID order, oldest first); without Owner but with Statuses it queries
// by_status_key for each status and shard in turn (by status, then shard,
// then ID); otherwise it scans the table (order unspecified). Every page
// resumes strictly after the last item returned, so paging never repeats or
// skips an instance that exists for the whole walk.
func (s *Store) ListInstances(ctx context.Context, q store.ListQuery) (store.Page[container.Instance], error) {
	const op = "list instances"
	switch {
	case q.Owner != "":
		return s.listOwner(ctx, op, q)
	case len(q.Statuses) > 0:
		c, err := decodeCursor(q.Cursor, cursorStatuses)
		if err != nil {
			return store.Page[container.Instance]{}, err
		}
		// A status named twice would list its instances twice.
		var statuses []fsm.Status
		for _, st := range q.Statuses {
			if !slices.Contains(statuses, st) {
				statuses = append(statuses, st)
			}
		}
		return s.listByStatus(ctx, op, cursorStatuses, statuses, c, pageLimit(q.Limit), func(e *expr) string {
			return instanceFilter(e, q, false)
		})
	default:
		return s.listScan(ctx, op, q)
	}
}

// listOwner lists one owner's instances through by_owner, in ID order.
func (s *Store) listOwner(ctx context.Context, op string, q store.ListQuery) (store.Page[container.Instance], error) {
	e := newExpr()
	keyCond := e.n(AttrOwner) + " = " + e.s(q.Owner)
	filter := instanceFilter(e, q, true)
	after := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{AttrID: strAV(id), AttrOwner: strAV(q.Owner)}
	}
	return s.listAfter(ctx, op, q, cursorOwner, after, s.queryIndex(op, IndexByOwner, keyCond, filter, e), filter != "")
}

// listScan lists every owner's instances (no owner, no status) with a
// consistent scan.
func (s *Store) listScan(ctx context.Context, op string, q store.ListQuery) (store.Page[container.Instance], error) {
	e := newExpr()
	filter := instanceFilter(e, q, false)
	fetch := func(ctx context.Context, start map[string]types.AttributeValue, n int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
		in := &dynamodb.ScanInput{
			TableName:         aws.String(s.instances),
			ExclusiveStartKey: start,
			ConsistentRead:    aws.Bool(true),
			Limit:             aws.Int32(n),
		}
		if filter != "" {
			in.FilterExpression = aws.String(filter)
			in.ExpressionAttributeNames = e.namesOrNil()
			in.ExpressionAttributeValues = e.valuesOrNil()
		}
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, nil, fail(op, s.instances, "", err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
	return s.listAfter(ctx, op, q, cursorScan, instanceKey, fetch, filter != "")
}

// listAfter pages through fetch from the instance after the one q's cursor
// (of kind) names; after turns that instance's ID into the key to start
// from.
func (s *Store) listAfter(ctx context.Context, op string, q store.ListQuery, kind string,
	after func(id string) map[string]types.AttributeValue, fetch fetcher, filtered bool) (store.Page[container.Instance], error) {
	c, err := decodeCursor(q.Cursor, kind)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	var start map[string]types.AttributeValue
	if c.ID != "" {
		start = after(c.ID)
	}
	items, more, err := collect(ctx, fetch, start, pageLimit(q.Limit), filtered)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return s.instancePage(op, items, more, func(last container.Instance) cursor {
		return cursor{Kind: kind, ID: last.ID}
	})
}

// ListActive returns the instances in every non-terminal status, querying
// by_status_key once per status and shard, so terminal instances are never
// read.
func (s *Store) ListActive(ctx context.Context, cur string, limit int) (store.Page[container.Instance], error) {
	c, err := decodeCursor(cur, cursorActive)
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return s.listByStatus(ctx, "list active", cursorActive, activeStatuses(), c, pageLimit(limit), nil)
}

func activeStatuses() []fsm.Status {
	var out []fsm.Status
	for _, st := range fsm.All {
		if !st.Terminal() {
			out = append(out, st)
		}
	}
	return out
}

// listByStatus walks the index partitions of statuses[c.Index:], each status
// shard by shard (statusKey) and each shard in ID order, resuming after
// c.ID in shard c.Shard of the first. The cursor names the status, shard
// and ID of the last item returned; an instance keeps its shard for life,
// so resuming strictly after that position never repeats or skips one
// that keeps its status for the whole walk.
func (s *Store) listByStatus(ctx context.Context, op, kind string, statuses []fsm.Status, c cursor, limit int, filter func(*expr) string) (store.Page[container.Instance], error) {
	page := store.Page[container.Instance]{Items: []container.Instance{}}
	last := cursor{Kind: kind, Index: -1}
	for i := c.Index; i < len(statuses); i++ {
		first := 0
		if i == c.Index {
			first = c.Shard
		}
		for n := first; n < IndexShards; n++ {
			key := shardKey(string(statuses[i]), n)
			var start map[string]types.AttributeValue
			if i == c.Index && n == c.Shard && c.ID != "" {
				start = map[string]types.AttributeValue{AttrID: strAV(c.ID), AttrStatusKey: strAV(key)}
			}
			e := newExpr()
			keyCond := e.n(AttrStatusKey) + " = " + e.s(key)
			var f string
			if filter != nil {
				f = filter(e)
			}
			// When the page is already full, this asks for one item only, to
			// tell whether a next page exists.
			items, more, err := collect(ctx, s.queryIndex(op, IndexByStatus, keyCond, f, e), start, limit-len(page.Items), f != "")
			if err != nil {
				return store.Page[container.Instance]{}, err
			}
			for _, av := range items {
				in, err := unmarshalInstance(av)
				if err != nil {
					return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s %s: %w", op, s.instances, err)
				}
				page.Items = append(page.Items, in)
				last = cursor{Kind: kind, Index: i, Shard: n, ID: in.ID}
			}
			if more {
				if last.Index < 0 { // unreachable: limit ≥ 1 makes collect return an item before "more"
					return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s: more items but none returned", op)
				}
				page.NextCursor = last.encode()
				return page, nil
			}
		}
	}
	return page, nil
}

// queryIndex returns a fetcher for a Query on an index of the instances
// table. GSI reads are eventually consistent: an instance written a moment
// ago may be missing from a listing for that moment.
func (s *Store) queryIndex(op, index, keyCond, filter string, e *expr) fetcher {
	return func(ctx context.Context, start map[string]types.AttributeValue, n int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.instances),
			IndexName:                 aws.String(index),
			KeyConditionExpression:    aws.String(keyCond),
			ExpressionAttributeNames:  e.namesOrNil(),
			ExpressionAttributeValues: e.valuesOrNil(),
			ExclusiveStartKey:         start,
			ScanIndexForward:          aws.Bool(true),
			Limit:                     aws.Int32(n),
		}
		if filter != "" {
			in.FilterExpression = aws.String(filter)
		}
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, nil, fail(op, s.instances+"/"+index, "", err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
}

// instanceFilter is the FilterExpression for q's template, group, labels
// and (when the key does not already select them) statuses.
func instanceFilter(e *expr, q store.ListQuery, statuses bool) string {
	var clauses []string
	if statuses && len(q.Statuses) > 0 {
		vals := make([]string, len(q.Statuses))
		for i, st := range q.Statuses {
			vals[i] = string(st)
		}
		clauses = append(clauses, e.in(AttrStatus, vals))
	}
	if q.Template != "" {
		clauses = append(clauses, e.n("template")+" = "+e.s(q.Template))
	}
	if q.Group != "" {
		clauses = append(clauses, e.n("group")+" = "+e.s(q.Group))
	}
	// Sorted so that the same query always builds the same expression.
	keys := make([]string, 0, len(q.Labels))
	for k := range q.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		clauses = append(clauses, e.n("labels")+"."+e.n(k)+" = "+e.s(q.Labels[k]))
	}
	return and(clauses...)
}

func (s *Store) instancePage(op string, items []map[string]types.AttributeValue, more bool, next func(container.Instance) cursor) (store.Page[container.Instance], error) {
	page := store.Page[container.Instance]{Items: make([]container.Instance, 0, len(items))}
	for _, av := range items {
		in, err := unmarshalInstance(av)
		if err != nil {
			return store.Page[container.Instance]{}, fmt.Errorf("dynamostore: %s %s: %w", op, s.instances, err)
		}
		page.Items = append(page.Items, in)
	}
	if more && len(page.Items) > 0 {
		page.NextCursor = next(page.Items[len(page.Items)-1]).encode()
	}
	return page, nil
}
