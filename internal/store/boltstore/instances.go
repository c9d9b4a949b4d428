package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// CreateInstance commits the create store.PlanCreate describes in one
// transaction.
func (s *Store) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	w, err := store.PlanCreate(p, s.now())
	if err != nil {
		return container.Instance{}, fmt.Errorf("boltstore: %w", err)
	}
	err = s.update(ctx, "create instance "+w.Instance.ID, func(tx *bolt.Tx) error { return commit(tx, w) })
	if err != nil {
		return container.Instance{}, err
	}
	return w.Instance.Clone(), nil
}

// Transition is one conditional write: the FSM check happens before the
// transaction (it needs no data), the version and status checks inside it.
func (s *Store) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	if err := store.CheckTransition(p); err != nil {
		return container.Instance{}, fmt.Errorf("boltstore: transition %s: %w", p.ID, err)
	}
	var w *store.Write
	err := s.update(ctx, "transition "+p.ID, func(tx *bolt.Tx) error {
		old, err := mustLoadInstance(tx, p.ID)
		if err != nil {
			return err
		}
		if w, err = store.PlanTransition(p, old, s.now()); err != nil {
			return err
		}
		return commit(tx, w)
	})
	if err != nil {
		return container.Instance{}, err
	}
	return w.Instance.Clone(), nil
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

// DeleteInstance commits the removal store.PlanDelete describes; the
// events stay readable until store.EventRetention has passed.
func (s *Store) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	return s.update(ctx, "delete instance "+p.ID, func(tx *bolt.Tx) error {
		in, err := mustLoadInstance(tx, p.ID)
		if err != nil {
			return err
		}
		w, err := store.PlanDelete(p, in, s.now())
		if err != nil {
			return err
		}
		return commit(tx, w)
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
