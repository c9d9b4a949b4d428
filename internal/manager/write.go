package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// MaxConflictRetries bounds how often a write that lost a race
// (store.ErrConflict: the instance moved between the read and the
// conditional write) is decided again on fresh state. Every instance write
// of berth — user requests, the state loop, the workers' and the
// reconciler's — goes through the manager, and this is its one limit.
const MaxConflictRetries = 8

// retryOnConflict runs try, one read and one conditional write, again while
// its write loses a race, at most MaxConflictRetries more times.
func retryOnConflict(try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		if !errors.Is(err, store.ErrConflict) || attempt >= MaxConflictRetries {
			return err
		}
	}
}

// Decide chooses an instance write from the instance as it is now: the
// transition to make (ID, ExpectVersion and From are filled in from inst),
// nil to write nothing, or an error to stop. It may be called several times
// (once per race lost) and must decide from inst alone. An error it returns
// is passed on as it is; it should not be store.ErrConflict.
type Decide func(inst container.Instance) (*store.TransitionParams, error)

// advance is how the manager's intents change an instance: it reads the
// instance, lets decide choose the write and makes it
// conditional on the version read, deciding again on fresh state when the
// write loses a race (MaxConflictRetries). It returns the instance as
// written, or as read when decide chose nothing. A missing instance is
// store.ErrNotFound.
func (m *Manager) advance(ctx context.Context, id string, decide Decide) (container.Instance, error) {
	inst, err := m.store.GetInstance(ctx, id)
	if err != nil {
		return container.Instance{}, err
	}
	return m.advanceFrom(ctx, inst, decide)
}

// advanceFrom is advance from an instance the caller has just read (a page
// of a listing, say): the first decision is made on inst without reading it
// again; a lost race reads it afresh and decides again.
func (m *Manager) advanceFrom(ctx context.Context, inst container.Instance, decide Decide) (container.Instance, error) {
	var out container.Instance
	fresh := true
	err := retryOnConflict(func() error {
		if !fresh {
			var err error
			if inst, err = m.store.GetInstance(ctx, inst.ID); err != nil {
				return err
			}
		}
		fresh = false
		p, err := decide(inst)
		if err != nil || p == nil {
			out = inst
			return err
		}
		p.ID, p.ExpectVersion, p.From = inst.ID, inst.Version, inst.Status
		var werr error
		out, werr = m.store.Transition(ctx, *p)
		return werr
	})
	return out, err
}

// DecideRemoval is Decide for removing the instance: the deletion to make
// (ID and ExpectVersion are filled in), nil to remove nothing, or an error.
type DecideRemoval func(inst container.Instance) (*store.DeleteParams, error)

// remove deletes an instance as advance changes one: decided on its current
// state, conditional on the version read, decided again after a lost race.
// A missing instance is store.ErrNotFound.
func (m *Manager) remove(ctx context.Context, id string, decide DecideRemoval) error {
	return retryOnConflict(func() error {
		inst, err := m.store.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		p, err := decide(inst)
		if err != nil || p == nil {
			return err
		}
		p.ID, p.ExpectVersion = inst.ID, inst.Version
		return m.store.DeleteInstance(ctx, *p)
	})
}

// Record appends ev to the history of inst, which the caller read (a page
// of a listing, say), if the instance is still at that version: ev speaks
// of inst's status, and once the instance has moved on (a delete requested
// since, say) an event naming the old status would break the history's
// chain. The instance's status stays as it is. An instance that moved is
// ErrMoved, nothing written; a missing instance is store.ErrNotFound.
func (m *Manager) Record(ctx context.Context, inst container.Instance, ev container.Event) error {
	_, err := m.store.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: inst.Status, Event: &ev,
	})
	if errors.Is(err, store.ErrConflict) {
		return movedError{fmt.Sprintf("instance %s moved since version %d (%s); %s not recorded", inst.ID, inst.Version, inst.Status, ev.Type)}
	}
	return err
}
