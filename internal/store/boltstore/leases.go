package boltstore

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// leaseRecord is one lease slot in the meta bucket
// (store.LeaseSlotName).
type leaseRecord struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// TakeLease takes one of key's n leases for holder (store.LeaseStore):
// the slots are read and one written in one transaction.
func (s *Store) TakeLease(ctx context.Context, key, holder string, n int, until, now time.Time) (store.Lease, bool, error) {
	var out store.Lease
	var ok bool
	err := s.update(ctx, "take lease "+key, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		free := -1
		for i := range n {
			slot := (store.LeaseStart(holder, n) + i) % n
			var rec leaseRecord
			found, err := getJSON(meta, []byte(store.LeaseSlotName(key, slot)), &rec)
			if err != nil {
				return err
			}
			if found && rec.Holder == holder {
				free = slot
				break
			}
			if free < 0 && (!found || !rec.Until.After(now)) {
				free = slot
			}
		}
		if free < 0 {
			return nil
		}
		out, ok = store.Lease{Key: key, Slot: free, Holder: holder}, true
		return putJSON(meta, []byte(store.LeaseSlotName(key, free)), leaseRecord{Holder: holder, Until: until.UTC()})
	})
	return out, ok, err
}

// ReleaseLease gives l back when its slot is still l's holder's.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	return s.update(ctx, "release lease "+l.Key, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		name := []byte(store.LeaseSlotName(l.Key, l.Slot))
		var rec leaseRecord
		found, err := getJSON(meta, name, &rec)
		if err != nil || !found || rec.Holder != l.Holder {
			return err
		}
		return meta.Delete(name)
	})
}

var _ store.LeaseStore = (*Store)(nil)
