package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

func eventKey(instanceID string, seq int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrInstanceID: strAV(instanceID), AttrSeq: numAV(seq)}
}

// markerItem is the deletion marker of a deleted instance (seq 0): it says
// when the instance was deleted, which is what ListEvents checks, since TTL
// removes expired items only eventually.
func markerItem(instanceID string, deletedAt time.Time, expires int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrInstanceID: strAV(instanceID),
		AttrSeq:        numAV(markerSeq),
		"deleted_at":   strAV(fmtTime(deletedAt)),
		AttrExpiresAt:  numAV(expires),
	}
}

func stampExpiry(expires int64) *expr {
	e := newExpr()
	e.update = "SET " + e.n(AttrExpiresAt) + " = " + e.num(expires)
	return e
}

// AppendEvent records an event as the instance's next seq without changing
// the instance otherwise (no version bump).
func (s *Store) AppendEvent(ctx context.Context, ev container.Event) (container.Event, error) {
	const op = "append event"
	if ev.InstanceID == "" {
		return container.Event{}, fmt.Errorf("dynamostore: %s: event has no instance ID", op)
	}
	token := newRequestToken()
	var lost error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, lost); err != nil {
				return container.Event{}, err
			}
		}
		cur, err := s.getInstance(ctx, op, ev.InstanceID)
		if err != nil {
			return container.Event{}, err
		}
		e := store.FillEvent(ev, cur.ID, cur.EventSeq+1, s.now())
		evAV, err := marshalEvent(e, 0)
		if err != nil {
			return container.Event{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		bump := newExpr()
		bump.update = "SET " + bump.n("event_seq") + " = " + bump.num(e.Seq)
		// Also fails when the instance is gone: a missing attribute equals
		// nothing.
		bump.condition = bump.n("event_seq") + " = " + bump.num(cur.EventSeq)
		t := &txn{}
		t.update(roleInstance, s.instances, instanceKey(cur.ID), bump)
		t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))

		out, err := s.run(ctx, t, token.attempt(attempt))
		if err != nil {
			return container.Event{}, fail(op, s.events, ev.InstanceID, err)
		}
		switch {
		case out == nil:
			it, err := unmarshalEventItem(evAV)
			if err != nil {
				return container.Event{}, err
			}
			return it.event()
		case out.failed[roleInstance] || out.failed[roleEvent] || out.conflict:
			// Another append or transition took the seq; the next read
			// tells whether the instance is still there.
			lost = fmt.Errorf("transaction cancelled: %v", out)
		default:
			return container.Event{}, out.unexpected(op, s.events, ev.InstanceID)
		}
	}
	return container.Event{}, errContention(op, s.events, ev.InstanceID, s.maxAttempts, lost)
}

// ListEvents returns an instance's events oldest first: of a live instance,
// or of a deleted one until store.EventRetention has passed since its
// deletion.
func (s *Store) ListEvents(ctx context.Context, instanceID, cur string, limit int) (store.Page[container.Event], error) {
	const op = "list events"
	c, err := decodeCursor(cur, cursorEvents)
	if err != nil {
		return store.Page[container.Event]{}, err
	}
	limit = pageLimit(limit)
	// The first page starts at the marker's seq, so one query also tells
	// whether the instance was deleted.
	from := c.Seq + 1
	if cur == "" {
		from = markerSeq
	}
	want := limit
	if cur == "" {
		want++ // room for the marker
	}
	items, more, err := collect(ctx, s.eventsFrom(op, instanceID, from), nil, want, false)
	if err != nil {
		return store.Page[container.Event]{}, err
	}

	var marker *eventItem
	if len(items) > 0 {
		if first, err := unmarshalEventItem(items[0]); err == nil && first.Seq == markerSeq {
			marker = &first
			items = items[1:]
		}
	}
	if len(items) > limit { // the first page of a live instance: no marker took the extra room
		items, more = items[:limit], true
	}
	if marker == nil && cur != "" {
		if marker, err = s.getMarker(ctx, op, instanceID); err != nil {
			return store.Page[container.Event]{}, err
		}
	}
	if err := s.historyReadable(ctx, op, instanceID, marker); err != nil {
		return store.Page[container.Event]{}, err
	}

	return s.eventPage(op, instanceID, items, more)
}

// eventsFrom reads an instance's events from seq from on, oldest first.
func (s *Store) eventsFrom(op, instanceID string, from int64) fetcher {
	return func(ctx context.Context, start map[string]types.AttributeValue, n int32) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
		e := newExpr()
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.events),
			KeyConditionExpression:    aws.String(e.n(AttrInstanceID) + " = " + e.s(instanceID) + " AND " + e.n(AttrSeq) + " >= " + e.num(from)),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			ExclusiveStartKey:         start,
			ConsistentRead:            aws.Bool(true),
			Limit:                     aws.Int32(n),
		})
		if err != nil {
			return nil, nil, fail(op, s.events, instanceID, err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
}

// eventPage decodes a page of event items.
func (s *Store) eventPage(op, instanceID string, items []map[string]types.AttributeValue, more bool) (store.Page[container.Event], error) {
	page := store.Page[container.Event]{Items: make([]container.Event, 0, len(items))}
	for _, av := range items {
		it, err := unmarshalEventItem(av)
		if err != nil {
			return store.Page[container.Event]{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.events, instanceID, err)
		}
		ev, err := it.event()
		if err != nil {
			return store.Page[container.Event]{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		page.Items = append(page.Items, ev)
	}
	if more && len(page.Items) > 0 {
		page.NextCursor = cursor{Kind: cursorEvents, Seq: page.Items[len(page.Items)-1].Seq}.encode()
	}
	return page, nil
}

func (s *Store) getMarker(ctx context.Context, op, instanceID string) (*eventItem, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.events),
		Key:            eventKey(instanceID, markerSeq),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fail(op, s.events, instanceID, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	it, err := unmarshalEventItem(out.Item)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.events, instanceID, err)
	}
	return &it, nil
}

// historyReadable decides whether an instance's events may be listed: a
// deleted instance's (marker present) until EventRetention has passed,
// checked against the clock rather than trusting TTL, which lags; otherwise
// only a live instance's, because events without a marker and without an
// instance are leftovers past their retention.
func (s *Store) historyReadable(ctx context.Context, op, instanceID string, marker *eventItem) error {
	if marker != nil {
		deletedAt, err := parseTime(marker.DeletedAt)
		if err != nil {
			return fmt.Errorf("dynamostore: %s %s %q: deletion marker: %w", op, s.events, instanceID, err)
		}
		if !s.now().Before(deletedAt.Add(store.EventRetention)) {
			return fmt.Errorf("dynamostore: %s %s %q: deleted %s, history retained until %s: %w",
				op, s.events, instanceID, fmtTime(deletedAt), fmtTime(deletedAt.Add(store.EventRetention)), store.ErrNotFound)
		}
		return nil
	}
	e := newExpr()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.instances),
		Key:                      instanceKey(instanceID),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(e.n(AttrID)),
		ExpressionAttributeNames: e.names,
	})
	if err != nil {
		return fail(op, s.instances, instanceID, err)
	}
	if out.Item == nil {
		return failWith(store.ErrNotFound, op, s.instances, instanceID)
	}
	return nil
}

// stampEvents sets the TTL attribute on events from..to of a deleted
// instance, a transaction's worth at a time.
func (s *Store) stampEvents(ctx context.Context, instanceID string, from, to, expires int64) error {
	const op = "stamp events"
	for lo := from; lo <= to; lo += maxTxnItems {
		hi := min(lo+maxTxnItems-1, to)
		t := &txn{}
		for seq := lo; seq <= hi; seq++ {
			t.update(roleStamp, s.events, eventKey(instanceID, seq), stampExpiry(expires))
		}
		token := newRequestToken()
		for attempt := 1; ; attempt++ {
			out, err := s.run(ctx, t, token.attempt(attempt))
			if err != nil {
				return fail(op, s.events, instanceID, err)
			}
			if out == nil {
				break
			}
			if !out.conflict || attempt >= s.maxAttempts {
				return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.events, instanceID, errors.New(out.String()))
			}
			if err := pause(ctx, attempt, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
