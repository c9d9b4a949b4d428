package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

func outboxKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrID: strAV(id)}
}

// outboxDone marks an item done: it leaves the undispatched index and
// expires after store.OutboxRetention. It requires the item to exist, so
// that completing an unknown id never creates a stub item, and not to be
// done already, so that a repeat does not push its expiry back.
func outboxDone(at time.Time) *expr {
	e := newExpr()
	e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s REMOVE %s",
		e.n("state"), e.s(string(container.OutboxDone)),
		e.n("updated_at"), e.s(fmtTime(at)),
		e.n(AttrExpiresAt), e.num(ttl(at.Add(store.OutboxRetention))),
		e.n(AttrUndispatched))
	e.condition = and("attribute_exists("+e.n(AttrID)+")", e.n("state")+" <> "+e.s(string(container.OutboxDone)))
	return e
}

// outboxDispatched marks a pending item dispatched inside a transaction
// (a worker's claim carrying the dispatch mark). Its condition fails on an
// item that is not pending (already dispatched, finished or missing), and
// the caller then writes without it: there is nothing to mark.
func outboxDispatched(at time.Time) *expr {
	e := newExpr()
	e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s REMOVE %s",
		e.n("state"), e.s(string(container.OutboxDispatched)),
		e.n("dispatched_at"), e.s(fmtTime(at)),
		e.n("updated_at"), e.s(fmtTime(at)),
		e.n(AttrUndispatched))
	e.condition = and("attribute_exists("+e.n(AttrID)+")", e.n("state")+" = "+e.s(string(container.OutboxPending)))
	return e
}

// GetOutbox returns an outbox item or ErrNotFound.
func (s *Store) GetOutbox(ctx context.Context, id string) (container.OutboxItem, error) {
	const op = "get outbox item"
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.outbox),
		Key:            outboxKey(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return container.OutboxItem{}, fail(op, s.outbox, id, err)
	}
	if out.Item == nil {
		return container.OutboxItem{}, failWith(store.ErrNotFound, op, s.outbox, id)
	}
	o, err := unmarshalOutbox(out.Item)
	if err != nil {
		return container.OutboxItem{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.outbox, id, err)
	}
	if store.OutboxExpired(o, s.now()) {
		return container.OutboxItem{}, fmt.Errorf("dynamostore: %s %s %q: expired: %w", op, s.outbox, id, store.ErrNotFound)
	}
	return o, nil
}

// MarkDispatched moves a pending item to dispatched. A repeat (the sweeper
// re-dispatching a stale item) moves DispatchedAt forward; a done or failed
// item is left as it is.
func (s *Store) MarkDispatched(ctx context.Context, id string, at time.Time) error {
	e := newExpr()
	e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s REMOVE %s",
		e.n("state"), e.s(string(container.OutboxDispatched)),
		e.n("dispatched_at"), e.s(fmtTime(at)),
		e.n("updated_at"), e.s(fmtTime(at)),
		e.n(AttrUndispatched))
	e.condition = e.in("state", []string{string(container.OutboxPending), string(container.OutboxDispatched)})
	return s.updateOutbox(ctx, "mark outbox item dispatched", id, e)
}

// MarkDone records that a worker finished the item; a repeat is a no-op.
func (s *Store) MarkDone(ctx context.Context, id string, at time.Time) error {
	return s.updateOutbox(ctx, "mark outbox item done", id, outboxDone(at))
}

// MarkAttempt records a failed attempt, leaving the state as it is (the
// dispatcher's mark may still be on its way); a done or failed item is left
// as it is.
func (s *Store) MarkAttempt(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error {
	e := newExpr()
	e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s",
		e.n("attempts"), e.num(int64(attempts)),
		e.n("last_error"), e.s(lastErr),
		e.n("updated_at"), e.s(fmtTime(at)))
	e.condition = e.in("state", []string{string(container.OutboxPending), string(container.OutboxDispatched)})
	return s.updateOutbox(ctx, "mark outbox attempt", id, e)
}

// MarkFailed records that the item was given up; like a done item it
// expires after store.OutboxRetention. A done item stays done.
func (s *Store) MarkFailed(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error {
	e := newExpr()
	e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s, %s = %s, %s = %s REMOVE %s",
		e.n("state"), e.s(string(container.OutboxFailed)),
		e.n("attempts"), e.num(int64(attempts)),
		e.n("last_error"), e.s(lastErr),
		e.n("updated_at"), e.s(fmtTime(at)),
		e.n(AttrExpiresAt), e.num(ttl(at.Add(store.OutboxRetention))),
		e.n(AttrUndispatched))
	e.condition = e.n("state") + " <> " + e.s(string(container.OutboxDone))
	return s.updateOutbox(ctx, "mark outbox item failed", id, e)
}

// updateOutbox applies an update to an existing outbox item. A failed
// condition is a no-op if the item exists (its state forbade the change)
// and ErrNotFound otherwise (also for a done item past its retention).
func (s *Store) updateOutbox(ctx context.Context, op, id string, e *expr) error {
	e.condition = and("attribute_exists("+e.n(AttrID)+")", e.condition)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.outbox),
		Key:                       outboxKey(id),
		UpdateExpression:          aws.String(e.update),
		ConditionExpression:       aws.String(e.condition),
		ExpressionAttributeNames:  e.namesOrNil(),
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fail(op, s.outbox, id, err)
	}
	_, err = s.GetOutbox(ctx, id)
	return err
}

// ListUndispatched returns pending items created before createdBefore,
// oldest first, from the sparse undispatched index: every shard is queried
// and the shards merged by created_key. limit ≤ 0 means 100.
func (s *Store) ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error) {
	const op = "list undispatched"
	if limit <= 0 {
		limit = 100
	}
	fetches := make([]fetcher, IndexShards)
	for shard := range IndexShards {
		e := newExpr()
		// created_key is "<created_at>#<id>" with a fixed-width time, so it is
		// below the bare time of createdBefore exactly when created_at is.
		keyCond := e.n(AttrUndispatched) + " = " + e.s(shardKey(string(container.OutboxPending), shard)) +
			" AND " + e.n(AttrCreatedKey) + " < " + e.s(fmtTime(createdBefore))
		fetches[shard] = func(ctx context.Context, start map[string]types.AttributeValue, n int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
			out, err := s.client.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(s.outbox),
				IndexName:                 aws.String(IndexUndispatched),
				KeyConditionExpression:    aws.String(keyCond),
				ExpressionAttributeNames:  e.namesOrNil(),
				ExpressionAttributeValues: e.valuesOrNil(),
				ExclusiveStartKey:         start,
				ScanIndexForward:          aws.Bool(true),
				Limit:                     aws.Int32(n),
			})
			if err != nil {
				return nil, nil, fail(op, s.outbox+"/"+IndexUndispatched, "", err)
			}
			return out.Items, out.LastEvaluatedKey, nil
		}
	}
	// A shard holds about limit/IndexShards of the oldest items; the one
	// extra saves most shards a second round.
	items, err := mergeShards(ctx, fetches, AttrCreatedKey, limit, limit/IndexShards+2)
	if err != nil {
		return nil, err
	}
	out := make([]container.OutboxItem, 0, len(items))
	now := s.now()
	for _, av := range items {
		o, err := unmarshalOutbox(av)
		if err != nil {
			return nil, fmt.Errorf("dynamostore: %s %s: %w", op, s.outbox, err)
		}
		// The index is eventually consistent: skip an item whose state has
		// already moved on but whose index entry has not caught up, and
		// one that has expired but that TTL has not removed yet.
		if o.State == container.OutboxPending && !store.OutboxExpired(o, now) {
			out = append(out, o)
		}
	}
	return out, nil
}
