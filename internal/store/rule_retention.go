package store

import (
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// retentionRule owns an instance's delete_at: every change of status sets
// it from the instance's retention (container.Retention.For the new
// status, counted from the write's time) or clears it, so an instance that
// ended is deleted that long after, and one started again is not. A
// field-only update keeps it, and the retention itself is the create's:
// no caller's Update moves either.
//
// The delete that carries a retention out (TransitionParams.Retention) is
// conditional on it in the write itself, like an expiry: the instance must
// still be to be deleted at that very time, and that time must have come by
// the store's clock. A start, a user's delete or a second timer then finds
// another delete_at, status or version, and nothing is done twice.
type retentionRule struct{ noRule }

func (retentionRule) create(w *Write, _ CreateParams) error {
	w.Instance.DeleteAt = nil
	return nil
}

func (retentionRule) transition(w *Write, p TransitionParams) error {
	w.Instance.Retention, w.Instance.DeleteAt = w.Prior.Retention.Clone(), w.Prior.DeleteAt
	if w.Prior.Status != w.Instance.Status {
		w.Instance.DeleteAt = nil
		if d := w.Instance.Retention.For(w.Instance.Status); d > 0 {
			at := w.At.Add(d)
			w.Instance.DeleteAt = &at
		}
	}
	if p.Retention == nil {
		return nil
	}
	at := w.Prior.DeleteAt
	switch {
	case p.To != fsm.DeletePending:
		return fmt.Errorf("retention of %s: a retention asks for a delete, not %s: %w", p.ID, p.To, ErrInvalidParams)
	case at == nil:
		return fmt.Errorf("retention of %s: the instance is not to be deleted any more: %w", p.ID, ErrConflict)
	case !at.Equal(*p.Retention):
		return fmt.Errorf("retention of %s at %s: it is now to be deleted at %s: %w",
			p.ID, p.Retention.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano), ErrConflict)
	case w.At.Before(*at):
		return fmt.Errorf("retention of %s at %s: not reached at %s: %w",
			p.ID, at.UTC().Format(time.RFC3339Nano), w.At.UTC().Format(time.RFC3339Nano), ErrConflict)
	}
	return nil
}
