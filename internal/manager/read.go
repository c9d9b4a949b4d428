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

// Get returns an instance the caller may see; another user's is ErrNotFound,
// so ids cannot be probed.
func (m *Manager) Get(ctx context.Context, c identity.Caller, id string) (container.Instance, error) {
	if !instanceID.MatchString(id) {
		// Not an id berth makes: nothing to look up (and no store limit to hit).
		return container.Instance{}, fmt.Errorf("container %.64q: %w", id, ErrNotFound)
	}
	inst, err := m.store.GetInstance(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.CanSee(inst.Owner)) {
		return container.Instance{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return container.Instance{}, fmt.Errorf("reading container %s: %w", id, err)
	}
	return inst, nil
}

// List returns the caller's instances (an admin's query may name any owner
// or none).
func (m *Manager) List(ctx context.Context, c identity.Caller, q store.ListQuery) (store.Page[container.Instance], error) {
	if !c.Admin {
		q.Owner = c.User
	}
	var f fields
	for _, s := range q.Statuses {
		if !s.Valid() {
			f.add("status", "unknown status %q", s)
		}
	}
	if q.Limit < 0 || q.Limit > 100 {
		f.add("limit", "must be 1-100")
	}
	if err := f.err(); err != nil {
		return store.Page[container.Instance]{}, err
	}
	return m.store.ListInstances(ctx, q)
}

// Events returns an instance's history, also for EventRetention after its
// deletion, to its owner (the first event's actor) and to admins.
func (m *Manager) Events(ctx context.Context, c identity.Caller, id, cursor string, limit int) (store.Page[container.Event], error) {
	if !instanceID.MatchString(id) {
		return store.Page[container.Event]{}, fmt.Errorf("container %.64q: %w", id, ErrNotFound)
	}
	if !c.Admin {
		inst, err := m.store.GetInstance(ctx, id)
		switch {
		case err == nil:
			if inst.Owner != c.User {
				return store.Page[container.Event]{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
			}
		case errors.Is(err, store.ErrNotFound):
			first, ferr := m.store.ListEvents(ctx, id, "", 1)
			if ferr != nil || len(first.Items) == 0 || first.Items[0].Owner() != c.User {
				return store.Page[container.Event]{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
			}
		default:
			return store.Page[container.Event]{}, fmt.Errorf("reading container %s: %w", id, err)
		}
	}
	page, err := m.store.ListEvents(ctx, id, cursor, limit)
	if errors.Is(err, store.ErrNotFound) {
		return page, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	return page, err
}

// Wait returns the instance once it has status want. It gives up with
// ErrWaitTimeout after timeout, and with ErrUnreachable as soon as the
// instance rests in a terminal status other than want, from which nothing
// moves without a new request. A deletion while waiting is ErrNotFound.
func (m *Manager) Wait(ctx context.Context, c identity.Caller, id string, want fsm.Status, timeout time.Duration) (container.Instance, error) {
	if !want.Valid() {
		return container.Instance{}, &ValidationError{Fields: []FieldError{{Field: "status", Message: fmt.Sprintf("unknown status %q", want)}}}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := m.waitPoll
	for {
		changed := m.changes.next()
		inst, err := m.Get(ctx, c, id)
		if err != nil {
			return container.Instance{}, err
		}
		if inst.Status == want {
			return inst, nil
		}
		if inst.Status.Terminal() {
			return inst, fmt.Errorf("container %s is %s; it will not become %s without a new request: %w", id, inst.Status, want, ErrUnreachable)
		}
		select {
		case <-ctx.Done():
			return inst, ctx.Err()
		case <-deadline.C:
			return inst, fmt.Errorf("container %s still %s after %s: %w", id, inst.Status, timeout, ErrWaitTimeout)
		case <-changed:
			continue // a write in this process: look again now
		case <-time.After(poll):
		}
		// Polling finds writes made elsewhere (the worker Lambdas).
		poll = min(poll*2, time.Second)
	}
}
