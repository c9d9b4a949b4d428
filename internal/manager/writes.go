package manager

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// The writes below are the one place each kind of instance change is
// built: a request for an operation, a cancel, a failure. Users' requests,
// group policies, the workers' and the reconciler's intents all build
// theirs here, so a reason, an event or an outbox item is made one way.

// request is a change that asks a worker for an operation: the instance
// moves to (or stays in) to, and the operation's outbox item is written
// in the same transaction.
type request struct {
	op    container.Op
	to    fsm.Status
	event string
	// reason is the new status_reason; empty leaves it as it is.
	reason string
	// message is the event's message; empty means reason.
	message   string
	actor     string
	requestID string
	// complete is an outbox item completed in the same write (the cleanup
	// item a policy's request carries out).
	complete string
	at       time.Time
}

// requestWrite is r as a transition of inst, with the item it enqueues.
func requestWrite(ctx context.Context, inst container.Instance, r request) (*store.TransitionParams, container.OutboxItem) {
	item := newItem(ctx, inst, r.op, r.requestID, r.at)
	msg := r.message
	if msg == "" {
		msg = r.reason
	}
	p := &store.TransitionParams{To: r.to, Outbox: &item, CompleteOutboxID: r.complete,
		Event: &container.Event{Type: r.event, From: inst.Status, To: r.to, At: r.at, Message: msg, Actor: r.actor}}
	if reason := r.reason; reason != "" {
		p.Update = func(i *container.Instance) { i.StatusReason = reason }
	}
	return p, item
}

// newItem is an outbox item applying op to inst, to be written with a
// change that takes inst to its next version. It carries ctx's trace
// (WithTrace), so one trace spans the request and its background work.
func newItem(ctx context.Context, inst container.Instance, op container.Op, requestID string, at time.Time) container.OutboxItem {
	return container.OutboxItem{
		ID: container.NewID(), InstanceID: inst.ID, Op: op, InstanceVersion: inst.Version + 1,
		RequestID: requestID, TraceContext: traceFrom(ctx), State: container.OutboxPending, CreatedAt: at, UpdatedAt: at,
	}
}

// cancelWrite ends a member that was never created: failed, with reason,
// and no group policy (nothing ran that a policy could clean up).
func cancelWrite(inst container.Instance, reason, actor string, at time.Time) *store.TransitionParams {
	return &store.TransitionParams{To: fsm.Failed,
		Update: func(i *container.Instance) { i.StatusReason, i.FinishedAt = reason, &at },
		Event:  &container.Event{Type: container.EventCancelled, From: inst.Status, To: fsm.Failed, At: at, Message: reason, Actor: actor},
	}
}

// failWrite fails inst with reason: the group policy a failure brings
// (dag_node_cleanup_on_failed) is requested in the same write and named
// in the reason, so a crash cannot separate the two.
func (m *Manager) failWrite(ctx context.Context, inst container.Instance, reason string, at time.Time) *store.TransitionParams {
	cleanup, note := m.memberCleanup(ctx, inst, fsm.Failed, false, nil)
	reason = policyNote(reason, note)
	return &store.TransitionParams{To: fsm.Failed, Outbox: cleanup,
		Update: func(i *container.Instance) { i.StatusReason, i.FinishedAt = reason, &at },
		Event: &container.Event{Type: container.EventFailed, From: inst.Status, To: fsm.Failed, At: at, Message: reason,
			Actor: container.ActorSystem},
	}
}

// orNow is at, or the manager's clock when at is zero.
func (m *Manager) orNow(at time.Time) time.Time {
	if at.IsZero() {
		at = m.now()
	}
	return at.UTC()
}
