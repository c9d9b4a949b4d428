package store

import (
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// expiryRule: the action of a reached lifetime (TransitionParams.Expiry) is
// conditional on the lifetime it carries out, in the write itself: the
// instance must still expire at that very time, and that time must have
// come by the store's clock. The write is conditional on the instance's
// version and status as read anyway, and it must change the status (to
// stop_pending or delete_pending), so with these checks an expiry is acted
// on once at most whoever races it: a timer that fires twice, a timer
// armed before an extension or a new start (both move expires_at), or a
// user's stop or delete (the expiry then finds another status or version
// and decides again on fresh state).
type expiryRule struct{ noRule }

func (expiryRule) transition(w *Write, p TransitionParams) error {
	if p.Expiry == nil {
		return nil
	}
	at := w.Prior.ExpiresAt
	switch {
	case p.To != fsm.StopPending && p.To != fsm.DeletePending:
		return fmt.Errorf("expiry of %s: an expiry asks for a stop or a delete, not %s: %w", p.ID, p.To, ErrInvalidParams)
	case p.To == p.From:
		return fmt.Errorf("expiry of %s: it is %s already: %w", p.ID, p.From, ErrConflict)
	case at == nil:
		return fmt.Errorf("expiry of %s: the instance has no lifetime any more: %w", p.ID, ErrConflict)
	case !at.Equal(*p.Expiry):
		return fmt.Errorf("expiry of %s at %s: it now expires at %s: %w",
			p.ID, p.Expiry.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano), ErrConflict)
	case w.At.Before(*at):
		return fmt.Errorf("expiry of %s at %s: not reached at %s: %w",
			p.ID, at.UTC().Format(time.RFC3339Nano), w.At.UTC().Format(time.RFC3339Nano), ErrConflict)
	}
	return nil
}
