package boltstore

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// apply writes one part of w in tx, through the applier of its kind.
func apply(tx *bolt.Tx, w *store.Write, part store.Part) error {
	switch p := part.(type) {
	case store.NewOutbox:
		return putNewOutbox(tx, p.Item)
	case store.CompleteOutbox:
		return completeOutbox(tx, p.ID, w.At)
	case store.DispatchOutbox:
		return dispatchOutbox(tx, p.ID, w.At)
	case store.Admission:
		return applyAdmission(tx, p)
	case store.SaveIdempotency:
		return applyIdempotency(tx, p.Record, w.At)
	case store.TemplateUnchanged:
		return templateUnchanged(tx, p.Template)
	case store.BindLedgerPut:
		return putLedger(tx, p)
	case store.QuotaReserve:
		return applyQuota(tx, p)
	case store.UsageAdd:
		return applyUsage(tx, p)
	}
	return fmt.Errorf("no applier for a %T: %w", part, store.ErrInvalidParams)
}

func applyAdmission(tx *bolt.Tx, a store.Admission) error {
	if !a.Take {
		return addAdmission(tx, -1)
	}
	if a.Limit > 0 {
		if n := admissionCount(tx); n >= int64(a.Limit) {
			return fmt.Errorf("%d of %d creates in flight: %w", n, a.Limit, store.ErrQueueFull)
		}
	}
	if a.OwnerLimit > 0 {
		if n := ownerCreates(tx, a.Owner, a.OwnerLimit); n >= a.OwnerLimit {
			return fmt.Errorf("%d of %q's creates in flight (its share: %d): %w", n, a.Owner, a.OwnerLimit, store.ErrOwnerQueueFull)
		}
	}
	return addAdmission(tx, 1)
}

func applyIdempotency(tx *bolt.Tx, rec store.IdempotencyRecord, now time.Time) error {
	if _, live, err := liveIdempotency(tx, rec.Owner, rec.Key, now); err != nil {
		return err
	} else if live {
		return fmt.Errorf("owner %q key %q: %w", rec.Owner, rec.Key, store.ErrDuplicateRequest)
	}
	return putIdempotency(tx, rec)
}
