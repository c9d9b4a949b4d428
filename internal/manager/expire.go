package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// ExpiryOutcome is what Expire did.
type ExpiryOutcome int

// The outcomes of Expire.
const (
	// ExpiryActed: the expiry's stop or delete was requested, now.
	ExpiryActed ExpiryOutcome = iota + 1
	// ExpiryMoot: nothing is left to do for this expiry: the instance is
	// gone, expires at another time (extended, started again), was acted
	// on already, or was stopped or deleted by someone else first.
	ExpiryMoot
	// ExpiryLater: the expiry is due but cannot be carried out yet (the
	// instance is being made or started; a stop can only follow that), or
	// it is not due yet by the manager's clock. The caller tries again
	// (DefaultExpiryRetry).
	ExpiryLater
)

// DefaultExpiryRetry is how soon a caller of Expire tries again after
// ExpiryLater.
const DefaultExpiryRetry = time.Second

// Expire carries out the deadline at at of instance id (see Deadline): a
// lifetime that was to end then, or the retention of an ended instance.
// A lifetime's on_expiry (stop or delete) is requested through the same
// write as a user's request (its outbox item, event, webhooks and group
// policy), with the reason container.ReasonLifetimeReached and the actor
// berth; a retention's delete likewise, with
// container.ReasonRetentionReached. The write is conditional on the
// instance still expiring (or still to be deleted) at at
// (store.TransitionParams.Expiry, Retention) and on the version and
// status read, so whoever calls it, however often and whatever races it,
// one deadline is acted on once at most: timers and the reconciler may all
// call it.
func (m *Manager) Expire(ctx context.Context, id string, at time.Time) (ExpiryOutcome, error) {
	outcome, reached := ExpiryMoot, container.ReasonLifetimeReached
	_, err := m.advance(ctx, id, func(inst container.Instance) (*store.TransitionParams, error) {
		var p *store.TransitionParams
		switch {
		case inst.DeleteAt != nil && inst.DeleteAt.Equal(at):
			outcome, p = m.retentionWrite(ctx, inst, at)
			reached = container.ReasonRetentionReached
		case inst.RestartAt != nil && inst.RestartAt.Equal(at) && (inst.ExpiresAt == nil || !inst.ExpiresAt.Equal(at)):
			outcome, p = m.restartWrite(ctx, inst, at)
			reached = "restart due"
		default:
			outcome, p = m.expiryWrite(ctx, inst, at)
		}
		return p, nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ExpiryMoot, nil
	case err != nil:
		return 0, fmt.Errorf("expiry of %s at %s: %w", id, at.Format(time.RFC3339Nano), err)
	}
	if outcome == ExpiryActed {
		m.log.InfoContext(ctx, reached, "instance_id", id, "at", at, "lag", m.now().Sub(at))
	}
	return outcome, nil
}

// expiryWrite decides the expiry at at of inst as it is now.
func (m *Manager) expiryWrite(ctx context.Context, inst container.Instance, at time.Time) (ExpiryOutcome, *store.TransitionParams) {
	if inst.ExpiresAt == nil || !inst.ExpiresAt.Equal(at) || inst.Lifetime == nil {
		return ExpiryMoot, nil
	}
	now := m.now().UTC()
	if now.Before(at) {
		return ExpiryLater, nil
	}
	op, later := expiryOp(inst.Lifetime.OnExpiry, inst.Status)
	if later {
		return ExpiryLater, nil
	}
	if op == "" {
		return ExpiryMoot, nil
	}
	to := opStatuses[op].requested
	p, _ := requestWrite(ctx, inst, request{op: op, to: to, event: opStatuses[op].requestEvent,
		reason: container.ReasonLifetimeReached, actor: container.ActorSystem, at: now})
	exp := at
	p.Expiry = &exp
	return ExpiryActed, p
}

// expiryOp is the operation an expiry asks of an instance in status s
// under onExpiry: "" when there is nothing left to do, later when the
// instance must first finish what it is doing (the FSM allows no stop
// during a create or a start, and no delete during a start). A lifetime
// bounds a live instance: one that has ended (stopped, failed) or is being
// stopped or deleted by the time it expires is left as it is (retention is
// what removes ended instances), so every expiry still to do is an active
// instance's, which the reconciler and the AWS watcher list.
func expiryOp(onExpiry string, s fsm.Status) (op container.Op, later bool) {
	switch s {
	case fsm.Running, fsm.Paused:
		if onExpiry == container.ExpiryDelete {
			return container.OpDelete, false
		}
		return container.OpStop, false
	case fsm.Pending, fsm.Creating:
		if onExpiry == container.ExpiryDelete {
			return container.OpDelete, false
		}
		return "", true
	case fsm.StartPending, fsm.Starting:
		return "", true
	}
	return "", false
}

// Expiring reports whether inst has an expiry still to carry out (its
// time may not have come): it has a lifetime, and its status leaves the
// expiry something to do now or once a create or start finishes. Timers
// and the reconciler arm or act on such instances only.
func Expiring(inst container.Instance) bool {
	if inst.ExpiresAt == nil || inst.Lifetime == nil {
		return false
	}
	op, later := expiryOp(inst.Lifetime.OnExpiry, inst.Status)
	return op != "" || later
}

// Deadline is the next time berth acts on inst by itself, and whether it
// has one: the soonest of its expires_at while its expiry is still to do
// (Expiring), its delete_at while it stays ended under a retention, and
// its restart_at while a restart waits its backoff. Timers and the
// reconciler call Expire with it.
func Deadline(inst container.Instance) (time.Time, bool) {
	var at time.Time
	ok := false
	consider := func(t *time.Time, applies bool) {
		if t != nil && applies && (!ok || t.Before(at)) {
			at, ok = *t, true
		}
	}
	consider(inst.ExpiresAt, Expiring(inst))
	consider(inst.DeleteAt, inst.Status.Terminal())
	consider(inst.RestartAt, inst.Status == fsm.Running)
	return at, ok
}
