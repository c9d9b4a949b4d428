package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/store"
)

// quotaOverridesName is the counters item holding every quota override
// (store.QuotaOverrideSet as a versioned document, like the webhook
// subscriptions): one read gives a create both its owner's and its team's.
const quotaOverridesName = "quota-overrides"

func (s *Store) quotaOverrides(ctx context.Context, op string) (store.QuotaOverrideSet, error) {
	var set store.QuotaOverrideSet
	err := s.getDoc(ctx, op, quotaOverridesName, &set)
	return set, err
}

// changeQuotaOverrides applies change to the set as read and writes it
// conditioned on the version read, reading again after a lost race.
func (s *Store) changeQuotaOverrides(ctx context.Context, op string, change func(*store.QuotaOverrideSet) error) error {
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		set, err := s.quotaOverrides(ctx, op)
		if err != nil {
			return err
		}
		expect := set.Version
		if err := change(&set); err != nil {
			return fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		set.Version = expect + 1
		item, cond, err := docPut(quotaOverridesName, set, set.Version)
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.counters), Item: item, ConditionExpression: cond.conditionOrNil(),
			ExpressionAttributeNames: cond.namesOrNil(), ExpressionAttributeValues: cond.valuesOrNil(),
		})
		switch {
		case err == nil:
			return nil
		case !isConditionFailed(err):
			return fail(op, s.counters, quotaOverridesName, err)
		}
		if err := pause(ctx, attempt, errors.New("quota overrides changed at version "+strconv.FormatInt(expect, 10))); err != nil {
			return err
		}
	}
	return errContention(op, s.counters, quotaOverridesName, s.maxAttempts, errors.New("conditional check failed"))
}

// PutQuotaOverride creates or replaces o.Subject's override.
func (s *Store) PutQuotaOverride(ctx context.Context, o store.QuotaOverride) (store.QuotaOverride, error) {
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = s.now()
	}
	err := s.changeQuotaOverrides(ctx, "put quota override", func(set *store.QuotaOverrideSet) error { return set.Put(o) })
	return o, err
}

// GetQuotaOverride returns sub's override or ErrNotFound.
func (s *Store) GetQuotaOverride(ctx context.Context, sub store.QuotaSubject) (store.QuotaOverride, error) {
	set, err := s.quotaOverrides(ctx, "get quota override")
	if err != nil {
		return store.QuotaOverride{}, err
	}
	o, ok := set.Get(sub)
	if !ok {
		return o, failWith(store.ErrNotFound, "get quota override", s.counters, sub.String())
	}
	return o, nil
}

// DeleteQuotaOverride removes sub's override; ErrNotFound if none.
func (s *Store) DeleteQuotaOverride(ctx context.Context, sub store.QuotaSubject) error {
	return s.changeQuotaOverrides(ctx, "delete quota override", func(set *store.QuotaOverrideSet) error { return set.Delete(sub) })
}

// ListQuotaOverrides returns every override in the set's order.
func (s *Store) ListQuotaOverrides(ctx context.Context) ([]store.QuotaOverride, error) {
	set, err := s.quotaOverrides(ctx, "list quota overrides")
	if err != nil {
		return nil, err
	}
	return set.List(), nil
}
