package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// idempotencyKey joins owner and key into the table's partition key. The
// owner's length comes first, so no choice of owner and key can collide
// with another pair, whatever characters either holds.
func idempotencyKey(owner, key string) string {
	return strconv.Itoa(len(owner)) + ":" + owner + ":" + key
}

// idempotencyItem is a record as stored. ExpiresAt (epoch seconds) is both
// the TTL attribute and the truth about liveness: a record is live while
// the clock's second is before it, whether or not TTL has removed it yet.
type idempotencyItem struct {
	PK          string `dynamodbav:"pk"`
	Owner       string `dynamodbav:"owner"`
	Key         string `dynamodbav:"key"`
	RequestHash string `dynamodbav:"request_hash,omitempty"`
	Response    []byte `dynamodbav:"response"`
	CreatedAt   string `dynamodbav:"created_at"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

func (it idempotencyItem) live(now time.Time) bool { return now.Unix() < it.ExpiresAt }

func (it idempotencyItem) record() (store.IdempotencyRecord, error) {
	created, err := parseTime(it.CreatedAt)
	if err != nil {
		return store.IdempotencyRecord{}, fmt.Errorf("decode idempotency record %q created_at: %w", it.PK, err)
	}
	return store.IdempotencyRecord{
		Owner: it.Owner, Key: it.Key, RequestHash: it.RequestHash, Response: it.Response, CreatedAt: created,
	}, nil
}

// idempotencyPut returns the item for rec and the condition that lets it
// replace only a missing or expired record.
func (s *Store) idempotencyPut(rec store.IdempotencyRecord, now time.Time) (map[string]types.AttributeValue, *expr, error) {
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	it := idempotencyItem{
		PK: idempotencyKey(rec.Owner, rec.Key), Owner: rec.Owner, Key: rec.Key, RequestHash: rec.RequestHash,
		Response: rec.Response, CreatedAt: fmtTime(rec.CreatedAt),
		ExpiresAt: ttl(rec.CreatedAt.Add(store.IdempotencyRetention)),
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, nil, fmt.Errorf("encode idempotency record %q: %w", it.PK, err)
	}
	e := newExpr()
	e.condition = "attribute_not_exists(" + e.n(AttrPK) + ") OR " + e.n(AttrExpiresAt) + " <= " + e.num(now.Unix())
	return av, e, nil
}

// PutIdempotency stores rec unless its (Owner, Key) has a live record, which
// it then returns with ErrAlreadyExists.
func (s *Store) PutIdempotency(ctx context.Context, rec store.IdempotencyRecord) (store.IdempotencyRecord, error) {
	const op = "put idempotency record"
	pk := idempotencyKey(rec.Owner, rec.Key)
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		av, cond, err := s.idempotencyPut(rec, s.now())
		if err != nil {
			return store.IdempotencyRecord{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(s.idempotency),
			Item:                      av,
			ConditionExpression:       aws.String(cond.condition),
			ExpressionAttributeNames:  cond.namesOrNil(),
			ExpressionAttributeValues: cond.valuesOrNil(),
		})
		switch {
		case err == nil:
			var it idempotencyItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return store.IdempotencyRecord{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.idempotency, pk, err)
			}
			return it.record()
		case isConditionFailed(err):
			existing, err := s.GetIdempotency(ctx, rec.Owner, rec.Key)
			if errors.Is(err, store.ErrNotFound) {
				continue // it expired between the put and the read: put again
			}
			if err != nil {
				return store.IdempotencyRecord{}, err
			}
			return existing, failWith(store.ErrAlreadyExists, op, s.idempotency, pk)
		default:
			return store.IdempotencyRecord{}, fail(op, s.idempotency, pk, err)
		}
	}
	return store.IdempotencyRecord{}, errContention(op, s.idempotency, pk, s.maxAttempts, errors.New("record kept expiring"))
}

// GetIdempotency returns the live record for (owner, key) or ErrNotFound.
func (s *Store) GetIdempotency(ctx context.Context, owner, key string) (store.IdempotencyRecord, error) {
	const op = "get idempotency record"
	pk := idempotencyKey(owner, key)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.idempotency),
		Key:            map[string]types.AttributeValue{AttrPK: strAV(pk)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.IdempotencyRecord{}, fail(op, s.idempotency, pk, err)
	}
	if out.Item == nil {
		return store.IdempotencyRecord{}, failWith(store.ErrNotFound, op, s.idempotency, pk)
	}
	var it idempotencyItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return store.IdempotencyRecord{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.idempotency, pk, err)
	}
	if !it.live(s.now()) {
		return store.IdempotencyRecord{}, fmt.Errorf("dynamostore: %s %s %q: expired: %w", op, s.idempotency, pk, store.ErrNotFound)
	}
	rec, err := it.record()
	if err != nil {
		return store.IdempotencyRecord{}, fmt.Errorf("dynamostore: %s: %w", op, err)
	}
	return rec, nil
}
