package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ErrNoLifetime is an extension of an instance that has no lifetime (409).
var ErrNoLifetime = errors.New("the container has no lifetime to extend")

// ExtendRequest is POST /api/containers/{id}/extend.
type ExtendRequest struct {
	// By is how much longer the instance lives: a duration ("10m").
	By string `json:"by"`
}

// extendable are the statuses in which an instance still lives: an
// instance asked to stop or delete, or ended, has no lifetime left to
// extend.
func extendable(s fsm.Status) bool {
	switch s {
	case fsm.Pending, fsm.Creating, fsm.Running, fsm.Paused, fsm.StartPending, fsm.Starting:
		return true
	}
	return false
}

// Extend moves the lifetime of the caller's (an admin: anyone's) instance
// by req.By, counted from its expires_at (from now when that has passed
// and the expiry is not carried out yet), never past its max
// (ValidationError naming the limit). Another owner's instance is
// ErrNotFound, one that has ended a StateError, one without a lifetime
// ErrNoLifetime. The write is conditional on the version read, so an
// expiry's action racing it either comes first (the extension then finds
// the instance ended) or finds expires_at moved and does nothing.
func (m *Manager) Extend(ctx context.Context, c identity.Caller, id string, req ExtendRequest) (container.Instance, error) {
	if req.By == "" {
		return container.Instance{}, &ValidationError{Fields: []FieldError{{Field: "by", Message: "is required"}}}
	}
	by, err := container.ParseDuration(req.By)
	if err != nil {
		return container.Instance{}, &ValidationError{Fields: []FieldError{{Field: "by", Message: err.Error()}}}
	}
	if _, err := m.Get(ctx, c, id); err != nil {
		return container.Instance{}, err
	}
	out, err := m.advance(ctx, id, func(inst container.Instance) (*store.TransitionParams, error) {
		return m.extendWrite(inst, by, c.Actor())
	})
	if errors.Is(err, store.ErrNotFound) {
		return container.Instance{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return container.Instance{}, fmt.Errorf("extend %s: %w", id, err)
	}
	m.log.InfoContext(ctx, "lifetime extended", "instance_id", id, "by", by, "expires_at", out.ExpiresAt, "actor", c.Actor())
	return out, nil
}

// extendWrite is the extension of inst by by: a field-only write with its
// event.
func (m *Manager) extendWrite(inst container.Instance, by time.Duration, actor string) (*store.TransitionParams, error) {
	if !extendable(inst.Status) {
		return nil, &StateError{Op: "extend", Current: inst.Status}
	}
	if inst.ExpiresAt == nil || inst.Lifetime == nil {
		return nil, fmt.Errorf("container %s: %w", inst.ID, ErrNoLifetime)
	}
	now := m.now().UTC()
	base := *inst.ExpiresAt
	if base.Before(now) {
		base = now
	}
	exp := base.Add(by)
	if capAt := inst.Lifetime.MaxExpiresAt; capAt != nil && exp.After(*capAt) {
		return nil, &ValidationError{Fields: []FieldError{{Field: "by", Message: fmt.Sprintf(
			"extending by %s would pass the max lifetime %s (counted from the create: until %s); at most %s is left",
			by, inst.Lifetime.Max, capAt.UTC().Format(time.RFC3339), max(0, capAt.Sub(base)).Round(time.Second))}}}
	}
	msg := fmt.Sprintf("lifetime extended by %s: expires at %s", by, exp.Format(time.RFC3339))
	return &store.TransitionParams{To: inst.Status,
		Update: func(i *container.Instance) { i.ExpiresAt = &exp },
		Event: &container.Event{Type: container.EventLifetimeExtended, From: inst.Status, To: inst.Status, At: now,
			Message: msg, Actor: actor},
	}, nil
}
