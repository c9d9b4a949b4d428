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

// cursorDeliveries is ListDeliveries' cursor kind: before ID, the
// created_key of the last delivery returned.
const cursorDeliveries = "deliveries"

// ListDeliveries queries the sparse by_webhook index of the outbox
// (partition: the subscription, sort: created_key) backwards, so one
// subscription's listing is one partition's range, newest first, whatever
// the table holds. Expired items TTL has not removed yet are skipped.
func (s *Store) ListDeliveries(ctx context.Context, webhookID, cur string, limit int) (store.Page[container.OutboxItem], error) {
	const op = "list deliveries"
	var page store.Page[container.OutboxItem]
	c, err := decodeCursor(cur, cursorDeliveries)
	if err != nil {
		return page, err
	}
	limit = pageLimit(limit)
	e := newExpr()
	keyCond := e.n(AttrWebhookID) + " = " + e.s(webhookID)
	if c.ID != "" {
		keyCond += " AND " + e.n(AttrCreatedKey) + " < " + e.s(c.ID)
	}
	now := s.now()
	var start map[string]types.AttributeValue
	for {
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.outbox),
			IndexName:                 aws.String(IndexByWebhook),
			KeyConditionExpression:    aws.String(keyCond),
			ExpressionAttributeNames:  e.namesOrNil(),
			ExpressionAttributeValues: e.valuesOrNil(),
			ExclusiveStartKey:         start,
			ScanIndexForward:          aws.Bool(false),
			// One more than the page needs tells whether there is a next.
			Limit: aws.Int32(int32(limit - len(page.Items) + 1)),
		})
		if err != nil {
			return store.Page[container.OutboxItem]{}, fail(op, s.outbox+"/"+IndexByWebhook, webhookID, err)
		}
		for _, av := range out.Items {
			o, err := unmarshalOutbox(av)
			if err != nil {
				return store.Page[container.OutboxItem]{}, fmt.Errorf("dynamostore: %s %s: %w", op, s.outbox, err)
			}
			if store.OutboxExpired(o, now) {
				continue
			}
			if len(page.Items) == limit {
				last := page.Items[limit-1]
				page.NextCursor = cursor{Kind: cursorDeliveries, ID: createdKey(last.CreatedAt, last.ID)}.encode()
				return page, nil
			}
			page.Items = append(page.Items, o)
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		start = out.LastEvaluatedKey
	}
}

// RedeliverOutbox makes a finished item pending again, conditioned on the
// state it was read in; after a lost race it reads the item again.
func (s *Store) RedeliverOutbox(ctx context.Context, id string, at time.Time) (container.OutboxItem, error) {
	const op = "redeliver outbox item"
	if at.IsZero() {
		at = s.now()
	}
	for attempt := 1; ; attempt++ {
		ob, err := s.GetOutbox(ctx, id)
		if err != nil {
			return container.OutboxItem{}, err
		}
		next, changed := store.Redeliver(ob, at)
		if !changed {
			return next, nil
		}
		e := newExpr()
		e.update = fmt.Sprintf("SET %s = %s, %s = %s, %s = %s, %s = %s, %s = %s REMOVE %s, %s",
			e.n("state"), e.s(string(next.State)),
			e.n("attempts"), e.num(0),
			e.n("updated_at"), e.s(fmtTime(next.UpdatedAt)),
			e.n(AttrUndispatched), e.s(undispatchedKey(id)),
			e.n(AttrExpiresAt), e.num(ttl(store.OutboxExpiresAt(next))),
			e.n("last_error"), e.n("dispatched_at"))
		e.condition = and("attribute_exists("+e.n(AttrID)+")", e.n("state")+" = "+e.s(string(ob.State)))
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.outbox), Key: outboxKey(id), UpdateExpression: aws.String(e.update),
			ConditionExpression: aws.String(e.condition), ExpressionAttributeNames: e.namesOrNil(),
			ExpressionAttributeValues: e.valuesOrNil(),
		})
		switch {
		case err == nil:
			return next, nil
		case !isConditionFailed(err):
			return container.OutboxItem{}, fail(op, s.outbox, id, err)
		case attempt >= s.maxAttempts:
			return container.OutboxItem{}, errContention(op, s.outbox, id, s.maxAttempts, err)
		}
	}
}
