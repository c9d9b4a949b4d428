package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// CreateInstance writes the instance, its outbox item, its first event, the
// optional idempotency record and the admission slot in one transaction.
// The checks run in the order the API reports them: template changed (when
// p.Template is set), queue full, id taken, repeated idempotency key. An id whose deleted predecessor's events are
// still retained counts as taken, so two histories never share one id.
func (s *Store) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	now := s.now()
	in, ob, ev, err := store.PrepareCreate(p, now)
	if err != nil {
		return container.Instance{}, fmt.Errorf("boltstore: %w", err)
	}
	var idem *store.IdempotencyRecord
	if p.Idempotency != nil {
		rec := *p.Idempotency
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = now
		}
		idem = &rec
	}

	err = s.update(ctx, "create instance "+in.ID, func(tx *bolt.Tx) error {
		if p.Template != nil {
			if err := templateUnchanged(tx, *p.Template); err != nil {
				return err
			}
		}
		if p.MaxPending > 0 {
			if n := admissionCount(tx); n >= int64(p.MaxPending) {
				return fmt.Errorf("%d of %d creates in flight: %w", n, p.MaxPending, store.ErrQueueFull)
			}
		}
		if tx.Bucket(bucketInstances).Get([]byte(in.ID)) != nil {
			return fmt.Errorf("instance %s: %w", in.ID, store.ErrAlreadyExists)
		}
		if tx.Bucket(bucketDeleted).Get([]byte(in.ID)) != nil {
			return fmt.Errorf("instance %s was deleted and its events are retained: %w", in.ID, store.ErrAlreadyExists)
		}
		if idem != nil {
			if _, live, err := liveIdempotency(tx, idem.Owner, idem.Key, now); err != nil {
				return err
			} else if live {
				return fmt.Errorf("owner %q key %q: %w", idem.Owner, idem.Key, store.ErrDuplicateRequest)
			}
			if err := putIdempotency(tx, *idem); err != nil {
				return err
			}
		}
		if err := putNewOutbox(tx, ob, now); err != nil {
			return err
		}
		for _, d := range p.Deliveries {
			dob, err := store.PrepareOutbox(d, in, now)
			if err != nil {
				return err
			}
			if err := putNewOutbox(tx, dob, now); err != nil {
				return err
			}
		}
		if err := putEvent(tx, ev); err != nil {
			return err
		}
		if err := saveInstance(tx, in, ""); err != nil {
			return err
		}
		return addAdmission(tx, 1)
	})
	if err != nil {
		return container.Instance{}, err
	}
	return in.Clone(), nil
}

// Transition is one conditional write: the FSM check happens before the
// transaction (it needs no data), the version and status checks inside it.
func (s *Store) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	if p.To != p.From {
		if err := fsm.Check(p.From, p.To); err != nil {
			return container.Instance{}, fmt.Errorf("boltstore: transition %s: %w", p.ID, err)
		}
	}
	var out container.Instance
	err := s.update(ctx, "transition "+p.ID, func(tx *bolt.Tx) error {
		now := s.now()
		old, err := mustLoadInstance(tx, p.ID)
		if err != nil {
			return err
		}
		if old.Version != p.ExpectVersion || old.Status != p.From {
			return fmt.Errorf("instance %s is at version %d status %s, caller expected version %d status %s: %w",
				p.ID, old.Version, old.Status, p.ExpectVersion, p.From, store.ErrConflict)
		}
		next := old.Clone()
		next.Status = p.To
		if p.Update != nil {
			p.Update(&next)
		}
		// The fields the store owns win over whatever Update did, so the
		// indexes and the event numbering stay true.
		next.ID, next.Owner, next.Status = old.ID, old.Owner, p.To
		next.Version = old.Version + 1
		next.EventSeq = old.EventSeq
		next.UpdatedAt = now

		if p.Event != nil {
			ev := *p.Event
			next.EventSeq++
			ev.InstanceID, ev.Seq = next.ID, next.EventSeq
			if ev.At.IsZero() {
				ev.At = now
			}
			if err := putEvent(tx, ev); err != nil {
				return err
			}
		}
		if p.Outbox != nil {
			// The request is for the instance as this write leaves it.
			ob, err := store.PrepareOutbox(*p.Outbox, next, now)
			if err != nil {
				return err
			}
			if err := putNewOutbox(tx, ob, now); err != nil {
				return err
			}
		}
		for _, d := range p.Deliveries {
			ob, err := store.PrepareOutbox(d, next, now)
			if err != nil {
				return err
			}
			if err := putNewOutbox(tx, ob, now); err != nil {
				return err
			}
		}
		if p.CompleteOutboxID != "" {
			if err := completeOutbox(tx, p.CompleteOutboxID, now); err != nil {
				return err
			}
		}
		if p.DispatchOutboxID != "" {
			if err := dispatchOutbox(tx, p.DispatchOutboxID, now); err != nil {
				return err
			}
		}
		if old.Status.HoldsCreateSlot() && !next.Status.HoldsCreateSlot() {
			if err := addAdmission(tx, -1); err != nil {
				return err
			}
		}
		if err := saveInstance(tx, next, old.Status); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return container.Instance{}, err
	}
	return out.Clone(), nil
}

// AppendEvent numbers the event after the instance's newest one. It bumps
// only EventSeq, not Version: the instance as the API shows it is unchanged,
// so a caller's ETag stays valid.
func (s *Store) AppendEvent(ctx context.Context, ev container.Event) (container.Event, error) {
	err := s.update(ctx, "append event to "+ev.InstanceID, func(tx *bolt.Tx) error {
		in, err := mustLoadInstance(tx, ev.InstanceID)
		if err != nil {
			return err
		}
		in.EventSeq++
		ev.Seq = in.EventSeq
		if ev.At.IsZero() {
			ev.At = s.now()
		}
		if err := putEvent(tx, ev); err != nil {
			return err
		}
		return saveInstance(tx, in, in.Status)
	})
	if err != nil {
		return container.Event{}, err
	}
	return ev, nil
}

// DeleteInstance removes the instance and its index entries, appends the
// final event and leaves a deletion marker that keeps the events readable
// until store.EventRetention has passed (then Purge removes both).
func (s *Store) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	return s.update(ctx, "delete instance "+p.ID, func(tx *bolt.Tx) error {
		now := s.now()
		in, err := mustLoadInstance(tx, p.ID)
		if err != nil {
			return err
		}
		if in.Version != p.ExpectVersion {
			return fmt.Errorf("instance %s is at version %d, caller expected %d: %w",
				p.ID, in.Version, p.ExpectVersion, store.ErrConflict)
		}
		ev := p.Event
		ev.InstanceID, ev.Seq = in.ID, in.EventSeq+1
		if ev.At.IsZero() {
			ev.At = now
		}
		if err := putEvent(tx, ev); err != nil {
			return err
		}
		for _, d := range p.Deliveries {
			ob, err := store.PrepareRemoval(d, in, ev.Seq, now)
			if err != nil {
				return err
			}
			if err := putNewOutbox(tx, ob, now); err != nil {
				return err
			}
		}
		if p.CompleteOutboxID != "" {
			if err := completeOutbox(tx, p.CompleteOutboxID, now); err != nil {
				return err
			}
		}
		if in.Status.HoldsCreateSlot() {
			if err := addAdmission(tx, -1); err != nil {
				return err
			}
		}
		if err := removeInstance(tx, in); err != nil {
			return err
		}
		mark := deletionRecord{DeletedAt: now, Owner: in.Owner, LastSeq: ev.Seq}
		if err := putJSON(tx.Bucket(bucketDeleted), []byte(in.ID), mark); err != nil {
			return err
		}
		return putExpiry(tx, mark.expiresAt(), expireEvents, []byte(in.ID))
	})
}

// GetInstance returns the stored instance, Spec and EventSeq included.
func (s *Store) GetInstance(ctx context.Context, id string) (container.Instance, error) {
	var out container.Instance
	err := s.view(ctx, "get instance "+id, func(tx *bolt.Tx) error {
		in, err := mustLoadInstance(tx, id)
		out = in
		return err
	})
	if err != nil {
		return container.Instance{}, err
	}
	return out, nil
}

// templateUnchanged is ErrTemplateChanged unless the stored template is
// still want (store.TemplateDoc).
func templateUnchanged(tx *bolt.Tx, want container.Template) error {
	var cur container.Template
	found, err := getJSON(tx.Bucket(bucketTemplates), []byte(want.Name), &cur)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("template %q is gone: %w", want.Name, store.ErrTemplateChanged)
	}
	a, err := store.TemplateDoc(cur)
	if err != nil {
		return err
	}
	b, err := store.TemplateDoc(want)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("template %q is at version %d, the create was built from %d: %w",
			want.Name, cur.Version, want.Version, store.ErrTemplateChanged)
	}
	return nil
}
