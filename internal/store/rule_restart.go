package store

import (
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// restartRule keeps a scheduled restart from outliving the state it was
// scheduled in: any change of status clears restart_at (a user's stop or
// delete, an expiry, a group's policy: each wins over a restart still in
// its backoff), and the policy the instance was created under is the
// create's, which no Update moves.
//
// The start that carries a restart out (TransitionParams.Restart) is
// conditional on it in the write itself: the instance must be running
// with that very restart_at, and that time must have come by the store's
// clock. A timer that fires twice, or late after a user's stop and start,
// then finds nothing to do.
type restartRule struct{ noRule }

func (restartRule) transition(w *Write, p TransitionParams) error {
	w.Instance.Restart = w.Prior.Restart.Clone()
	if w.Prior.Status != w.Instance.Status {
		w.Instance.RestartAt = nil
	}
	if p.Restart == nil {
		return nil
	}
	at := w.Prior.RestartAt
	switch {
	case p.From != fsm.Running || p.To != fsm.StartPending:
		return fmt.Errorf("restart of %s: a restart starts a running instance again, not %s → %s: %w", p.ID, p.From, p.To, ErrInvalidParams)
	case at == nil:
		return fmt.Errorf("restart of %s: no restart is scheduled any more: %w", p.ID, ErrConflict)
	case !at.Equal(*p.Restart):
		return fmt.Errorf("restart of %s at %s: it is now scheduled at %s: %w",
			p.ID, p.Restart.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano), ErrConflict)
	case w.At.Before(*at):
		return fmt.Errorf("restart of %s at %s: not reached at %s: %w",
			p.ID, at.UTC().Format(time.RFC3339Nano), w.At.UTC().Format(time.RFC3339Nano), ErrConflict)
	}
	return nil
}
