package store

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// Commit describes an instance write that committed.
type Commit struct {
	InstanceID string
	// Outbox: the write added an outbox item (a create, or a transition
	// carrying one).
	Outbox bool
	// Redelivered is the id of the outbox item a redelivery made pending
	// again (RedeliverOutbox), empty for every other write.
	Redelivered string
	// Deadline is the instance's container.Instance.Deadline as the write
	// left it (its delete_at, else its expires_at; nil: none, or the
	// instance is gone), so that the timer of its lifetime or retention
	// can be armed without a read.
	Deadline *time.Time
}

// Hooked is a Store that calls OnCommit after every committed instance
// write (CreateInstance, Transition, DeleteInstance), never before and never
// for a failed one: the local server wakes its waiters and its outbox
// watcher with it instead of making them poll. OnCommit must not block.
type Hooked struct {
	Store
	OnCommit func(Commit)
}

var _ Store = Hooked{}

// CreateInstance writes through and reports the commit.
func (s Hooked) CreateInstance(ctx context.Context, p CreateParams) (container.Instance, error) {
	in, err := s.Store.CreateInstance(ctx, p)
	if err == nil {
		s.OnCommit(Commit{InstanceID: in.ID, Outbox: true, Deadline: in.Deadline()})
	}
	return in, err
}

// Transition writes through and reports the commit.
func (s Hooked) Transition(ctx context.Context, p TransitionParams) (container.Instance, error) {
	in, err := s.Store.Transition(ctx, p)
	if err == nil {
		s.OnCommit(Commit{InstanceID: p.ID, Outbox: p.Outbox != nil || len(p.Deliveries) > 0, Deadline: in.Deadline()})
	}
	return in, err
}

// DeleteInstance writes through and reports the commit.
func (s Hooked) DeleteInstance(ctx context.Context, p DeleteParams) error {
	err := s.Store.DeleteInstance(ctx, p)
	if err == nil {
		s.OnCommit(Commit{InstanceID: p.ID, Outbox: len(p.Deliveries) > 0})
	}
	return err
}

// RedeliverOutbox writes through and reports a redelivery that made the
// item pending again, as an outbox commit, so that the local server's
// watcher sends it at once.
func (s Hooked) RedeliverOutbox(ctx context.Context, id string, at time.Time) (container.OutboxItem, error) {
	ob, err := s.Store.RedeliverOutbox(ctx, id, at)
	if err == nil && ob.State == container.OutboxPending {
		s.OnCommit(Commit{InstanceID: ob.InstanceID, Outbox: true, Redelivered: ob.ID})
	}
	return ob, err
}
