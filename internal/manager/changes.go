package manager

import (
	"context"
	"sync"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// changes wakes Wait when an instance changes in this process: the local
// server's workers write through the manager's store, so a waiter learns of
// a new status at once instead of at its next poll. Writes made by other
// processes (the worker Lambdas) are still found by polling.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

func newChanges() *changes { return &changes{ch: make(chan struct{})} }

// next returns a channel closed at the next change. Take it before reading
// the state it guards, so a change in between is not missed.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *changes) fire() {
	c.mu.Lock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.mu.Unlock()
}

// signallingStore is the manager's store: every committed instance write
// fires changes.
type signallingStore struct {
	store.Store
	changes *changes
}

func (s signallingStore) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	inst, err := s.Store.CreateInstance(ctx, p)
	if err == nil {
		s.changes.fire()
	}
	return inst, err
}

func (s signallingStore) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	inst, err := s.Store.Transition(ctx, p)
	if err == nil {
		s.changes.fire()
	}
	return inst, err
}

func (s signallingStore) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	err := s.Store.DeleteInstance(ctx, p)
	if err == nil {
		s.changes.fire()
	}
	return err
}
