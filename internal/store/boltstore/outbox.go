package boltstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// Outbox states move forward only: pending → dispatched → done | failed.
// Done is final. A late success may still turn failed into done (the work
// did happen), but nothing turns done or failed back into an earlier state,
// so a slow or repeated report cannot resurrect finished work.

// GetOutbox returns the item; an item past store.OutboxExpiresAt is gone
// even if Purge has not removed it yet.
func (s *Store) GetOutbox(ctx context.Context, id string) (container.OutboxItem, error) {
	var out container.OutboxItem
	err := s.view(ctx, "get outbox "+id, func(tx *bolt.Tx) error {
		ob, err := mustLoadOutbox(tx, id, s.now())
		out = ob
		return err
	})
	if err != nil {
		return container.OutboxItem{}, err
	}
	return out, nil
}

// MarkDispatched records the hand-over to a queue. A repeat (the sweeper
// re-dispatching a stale item) moves DispatchedAt forward.
func (s *Store) MarkDispatched(ctx context.Context, id string, at time.Time) error {
	return s.changeOutbox(ctx, "mark dispatched "+id, id, at, func(ob *container.OutboxItem, at time.Time) bool {
		if finished(ob.State) {
			return false
		}
		ob.State = container.OutboxDispatched
		ob.DispatchedAt = &at
		return true
	})
}

// MarkDone finishes the item; finished items expire after
// store.OutboxRetention, counted from at. Concurrent marks share one
// transaction (bolt's Batch: one fsync for all of them, as many webhook
// deliveries finish at once); each call still returns only once its mark
// is committed, so a caller acknowledges nothing before it is durable.
func (s *Store) MarkDone(ctx context.Context, id string, at time.Time) error {
	return s.changeOutboxIn(ctx, s.batch, "mark done "+id, id, at, func(ob *container.OutboxItem, at time.Time) bool {
		if ob.State == container.OutboxDone {
			return false
		}
		ob.State = container.OutboxDone
		return true
	})
}

// MarkAttempt records a failed attempt; on a finished item it is a no-op.
func (s *Store) MarkAttempt(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error {
	return s.changeOutbox(ctx, "mark attempt "+id, id, at, func(ob *container.OutboxItem, at time.Time) bool {
		if finished(ob.State) {
			return false
		}
		ob.Attempts, ob.LastError = attempts, lastErr
		return true
	})
}

// MarkFailed gives the item up; a done item stays done.
func (s *Store) MarkFailed(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error {
	return s.changeOutbox(ctx, "mark failed "+id, id, at, func(ob *container.OutboxItem, at time.Time) bool {
		if ob.State == container.OutboxDone {
			return false
		}
		ob.State = container.OutboxFailed
		ob.Attempts, ob.LastError = attempts, lastErr
		return true
	})
}

// ListUndispatched walks the pending index, which is ordered by CreatedAt,
// so it stops at the first item not created before createdBefore. A limit
// of zero or less means 100.
func (s *Store) ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error) {
	if limit <= 0 {
		limit = maxLimit
	}
	end := timeBytes(createdBefore)
	now := s.now()
	var out []container.OutboxItem
	err := s.view(ctx, "list undispatched", func(tx *bolt.Tx) error {
		items := tx.Bucket(bucketOutbox)
		c := tx.Bucket(bucketUndispatched).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if string(k[:8]) >= string(end) {
				break
			}
			var ob container.OutboxItem
			found, err := getJSON(items, k[8:], &ob)
			if err != nil {
				return err
			}
			if found && ob.State == container.OutboxPending && ob.CreatedAt.Before(createdBefore) && !store.OutboxExpired(ob, now) {
				out = append(out, ob)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func finished(st container.OutboxState) bool {
	return st == container.OutboxDone || st == container.OutboxFailed
}

// changeOutbox loads the item, lets change edit it (false: leave it as it
// is) and writes it back with its index entries.
func (s *Store) changeOutbox(ctx context.Context, op, id string, at time.Time, change func(*container.OutboxItem, time.Time) bool) error {
	return s.changeOutboxIn(ctx, s.update, op, id, at, change)
}

// changeOutboxIn is changeOutbox in a transaction write makes (s.update,
// or s.batch, which may run the change twice: it only reads and writes
// the transaction).
func (s *Store) changeOutboxIn(ctx context.Context, write func(context.Context, string, func(*bolt.Tx) error) error, op, id string,
	at time.Time, change func(*container.OutboxItem, time.Time) bool) error {
	if at.IsZero() {
		at = s.now()
	}
	return write(ctx, op, func(tx *bolt.Tx) error {
		ob, err := mustLoadOutbox(tx, id, s.now())
		if err != nil {
			return err
		}
		old := ob
		if !change(&ob, at) {
			return nil
		}
		ob.UpdatedAt = at
		return saveOutbox(tx, ob, old.State)
	})
}

// loadToMark reads the item a mark inside a write names; found is false
// (and err nil) when it is not there any more: it was done and has
// expired, and failing the instance write for it would be worse.
func loadToMark(tx *bolt.Tx, id string, at time.Time) (container.OutboxItem, bool, error) {
	ob, err := mustLoadOutbox(tx, id, at)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ob, false, nil
	case err != nil:
		return ob, false, err
	}
	return ob, true, nil
}

// completeOutbox is MarkDone inside a Transition or DeleteInstance. An item
// that is not there any more was done and has expired, so there is nothing
// left to record; failing the instance write for it would be worse.
func completeOutbox(tx *bolt.Tx, id string, at time.Time) error {
	ob, found, err := loadToMark(tx, id, at)
	if !found || ob.State == container.OutboxDone {
		return err
	}
	old := ob.State
	ob.State, ob.UpdatedAt = container.OutboxDone, at
	return saveOutbox(tx, ob, old)
}

// dispatchOutbox is MarkDispatched inside a Transition (a worker's claim
// carrying the dispatch mark): only a pending item moves; a dispatched one
// keeps its time, and a finished or missing one is nothing to mark.
func dispatchOutbox(tx *bolt.Tx, id string, at time.Time) error {
	ob, found, err := loadToMark(tx, id, at)
	if !found || ob.State != container.OutboxPending {
		return err
	}
	ob.State, ob.DispatchedAt, ob.UpdatedAt = container.OutboxDispatched, &at, at
	return saveOutbox(tx, ob, container.OutboxPending)
}

// putNewOutbox writes an item store.PrepareOutbox made ready.
func putNewOutbox(tx *bolt.Tx, ob container.OutboxItem) error {
	if tx.Bucket(bucketOutbox).Get([]byte(ob.ID)) != nil {
		return fmt.Errorf("outbox item %s: %w", ob.ID, store.ErrAlreadyExists)
	}
	if err := indexDelivery(tx, ob); err != nil {
		return err
	}
	return saveOutbox(tx, ob, "")
}

// saveOutbox writes ob and keeps the pending index and the expiry list in
// step with its state change from oldState ("" for a new item).
func saveOutbox(tx *bolt.Tx, ob container.OutboxItem, oldState container.OutboxState) error {
	if err := putJSON(tx.Bucket(bucketOutbox), []byte(ob.ID), ob); err != nil {
		return err
	}
	if err := indexState(tx.Bucket(bucketUndispatched), undispatchedKey(ob.CreatedAt, ob.ID),
		container.OutboxPending, oldState, ob.State); err != nil {
		return fmt.Errorf("pending index of outbox %s: %w", ob.ID, err)
	}
	if err := indexState(tx.Bucket(bucketDispatched), []byte(ob.ID),
		container.OutboxDispatched, oldState, ob.State); err != nil {
		return fmt.Errorf("dispatched index of outbox %s: %w", ob.ID, err)
	}
	// Every item is on the expiry list from its creation (OutboxMaxAge) and
	// again once finished (OutboxRetention from then).
	if oldState == "" || finished(ob.State) && !finished(oldState) {
		return putExpiry(tx, store.OutboxExpiresAt(ob), expireOutbox, []byte(ob.ID))
	}
	return nil
}

// indexState keeps key in idx while an item is in state: it adds the key
// when the item enters it (from oldState) and removes it when it leaves.
func indexState(idx *bolt.Bucket, key []byte, state, oldState, newState container.OutboxState) error {
	switch {
	case newState == state && oldState != state:
		return idx.Put(key, nil)
	case newState != state && oldState == state:
		return idx.Delete(key)
	}
	return nil
}

func mustLoadOutbox(tx *bolt.Tx, id string, now time.Time) (container.OutboxItem, error) {
	var ob container.OutboxItem
	found, err := getJSON(tx.Bucket(bucketOutbox), []byte(id), &ob)
	if err != nil {
		return container.OutboxItem{}, err
	}
	if !found || store.OutboxExpired(ob, now) {
		return container.OutboxItem{}, fmt.Errorf("outbox item %s: %w", id, store.ErrNotFound)
	}
	return ob, nil
}
