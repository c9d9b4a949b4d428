package dynamostore

import (
	"context"

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
	return changeDoc(ctx, s, op, quotaOverridesName, "quota overrides",
		func(set *store.QuotaOverrideSet) *int64 { return &set.Version }, change)
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
