package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// quotaUseKey is the counters key of a subject's use: "quota" 0x00 kind
// 0x00 name. Each write's reservation reads and writes it in the write's
// own transaction (bolt serializes them), so the use is exact.
func quotaUseKey(sub store.QuotaSubject) []byte {
	return joinKey("quota", string(joinKey(sub.Kind, sub.Name)))
}

func quotaUse(tx *bolt.Tx, sub store.QuotaSubject) (container.QuotaUse, error) {
	var u container.QuotaUse
	_, err := getJSON(tx.Bucket(bucketCounters), quotaUseKey(sub), &u)
	return u, err
}

// applyQuota reserves (or releases) q.Delta of q.Subject's use, refused
// with a *store.QuotaError when a bounded quota would pass its limit.
func applyQuota(tx *bolt.Tx, q store.QuotaReserve) error {
	u, err := quotaUse(tx, q.Subject)
	if err != nil {
		return err
	}
	if err := store.Refusal(q.Subject, u, q.Delta, q.Limit); err != nil {
		return err
	}
	u.Instances += q.Delta.Instances
	u.Running += q.Delta.Running
	u.Pending += q.Delta.Pending
	u.CPUMillis += q.Delta.CPUMillis
	u.MemoryBytes += q.Delta.MemoryBytes
	if u.IsZero() {
		return tx.Bucket(bucketCounters).Delete(quotaUseKey(q.Subject))
	}
	return putJSON(tx.Bucket(bucketCounters), quotaUseKey(q.Subject), u)
}

// QuotaUsage returns what sub's instances reserve.
func (s *Store) QuotaUsage(ctx context.Context, sub store.QuotaSubject) (container.QuotaUse, error) {
	var u container.QuotaUse
	err := s.view(ctx, "quota usage", func(tx *bolt.Tx) error {
		var err error
		u, err = quotaUse(tx, sub)
		return err
	})
	return u, err
}

// keyQuotaOverrides is the meta key of the overrides
// (store.QuotaOverrideSet), one document as in DynamoDB.
var keyQuotaOverrides = []byte("quota_overrides")

func quotaOverrides(tx *bolt.Tx) (store.QuotaOverrideSet, error) {
	var set store.QuotaOverrideSet
	_, err := getJSON(tx.Bucket(bucketMeta), keyQuotaOverrides, &set)
	return set, err
}

func (s *Store) changeQuotaOverrides(ctx context.Context, op string, change func(*store.QuotaOverrideSet) error) error {
	return s.update(ctx, op, func(tx *bolt.Tx) error {
		set, err := quotaOverrides(tx)
		if err != nil {
			return err
		}
		if err := change(&set); err != nil {
			return err
		}
		set.Version++
		return putJSON(tx.Bucket(bucketMeta), keyQuotaOverrides, set)
	})
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
	var o store.QuotaOverride
	err := s.view(ctx, "get quota override", func(tx *bolt.Tx) error {
		set, err := quotaOverrides(tx)
		if err != nil {
			return err
		}
		var ok bool
		if o, ok = set.Get(sub); !ok {
			return fmt.Errorf("quota override of %s: %w", sub, store.ErrNotFound)
		}
		return nil
	})
	return o, err
}

// DeleteQuotaOverride removes sub's override; ErrNotFound if none.
func (s *Store) DeleteQuotaOverride(ctx context.Context, sub store.QuotaSubject) error {
	return s.changeQuotaOverrides(ctx, "delete quota override", func(set *store.QuotaOverrideSet) error { return set.Delete(sub) })
}

// ListQuotaOverrides returns every override in the set's order.
func (s *Store) ListQuotaOverrides(ctx context.Context) ([]store.QuotaOverride, error) {
	var out []store.QuotaOverride
	err := s.view(ctx, "list quota overrides", func(tx *bolt.Tx) error {
		set, err := quotaOverrides(tx)
		out = set.List()
		return err
	})
	return out, err
}
