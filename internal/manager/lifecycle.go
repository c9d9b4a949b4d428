package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// Result is the outcome of Start, Stop or Delete. Enqueued is false when the
// request needed no new work (already stopped, already being deleted).
type Result struct {
	Instance container.Instance
	Enqueued bool
}

// lifecycleOp describes one user operation on an existing instance (start, stop, delete).
// The status it moves the instance to and the event of the move are the
// operation's own (opStatuses).
type lifecycleOp struct {
	name   string // for messages: "start"
	op     container.Op
	noWork func(fsm.Status) bool // statuses in which the request is already satisfied
}

var (
	startOp = lifecycleOp{name: "start", op: container.OpStart,
		noWork: func(s fsm.Status) bool { return s == fsm.StartPending || s == fsm.Starting }}
	// Stop on a terminal instance is a no-op answered 200: there is nothing to stop.
	stopOp = lifecycleOp{name: "stop", op: container.OpStop,
		noWork: func(s fsm.Status) bool { return s.Terminal() || s == fsm.StopPending || s == fsm.Stopping }}
	// Delete of an instance already being deleted enqueues nothing new.
	deleteOp = lifecycleOp{name: "delete", op: container.OpDelete,
		noWork: func(s fsm.Status) bool { return s == fsm.DeletePending || s == fsm.Deleting }}
)

// Start asks for a stopped (or running, to restart) container to start.
func (m *Manager) Start(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (Result, error) {
	return m.request(ctx, c, id, ifMatch, requestID, startOp)
}

// Stop asks for a container to stop. Already terminal: nothing to do.
func (m *Manager) Stop(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (Result, error) {
	return m.request(ctx, c, id, ifMatch, requestID, stopOp)
}

// Delete asks for a container to be removed, with its instance; its events
// stay readable for store.EventRetention.
func (m *Manager) Delete(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (Result, error) {
	return m.request(ctx, c, id, ifMatch, requestID, deleteOp)
}

func (m *Manager) request(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string, op lifecycleOp) (Result, error) {
	return m.userWrite(ctx, c, id, ifMatch, requestID, op.name, func(inst container.Instance) (*store.TransitionParams, error) {
		if op.noWork(inst.Status) {
			return nil, nil
		}
		to := opStatuses[op.op].requested
		if !fsm.Can(inst.Status, to) {
			return nil, &StateError{Op: op.name, Current: inst.Status}
		}
		p, _ := requestWrite(ctx, inst, request{op: op.op, to: to, event: opStatuses[op.op].requestEvent,
			reason: op.name + " requested by " + c.Actor(), message: op.name + " requested", actor: c.Actor(),
			requestID: requestID, at: m.now().UTC()})
		if op.op == container.OpStart {
			// A start is charged to the instance's owner and team, whoever asks.
			var err error
			if p.Quota, err = m.quotaLimits(ctx, inst.Owner, inst.Team); err != nil {
				return nil, err
			}
			restartWith(p, inst, m.now().UTC())
			forgetRestarts(p)
		}
		return p, nil
	})
}

// userWrite carries out one user's request on instance id: it reads the
// instance as c may see it, checks ifMatch, lets build decide the write
// (nil: nothing to do, the instance answered as it is; an error refuses)
// and commits it, deciding again on fresh state when a worker moved the
// instance meanwhile (with ifMatch, that is a 412).
func (m *Manager) userWrite(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID, name string,
	build func(container.Instance) (*store.TransitionParams, error)) (Result, error) {
	var res Result
	err := retryOnConflict(func() error {
		inst, err := m.Get(ctx, c, id)
		if err != nil {
			return err
		}
		if ifMatch != nil && *ifMatch != inst.Version {
			return fmt.Errorf("instance %s is at version %d, not %d: %w", id, inst.Version, *ifMatch, ErrVersion)
		}
		p, err := build(inst)
		if err != nil || p == nil {
			res = Result{Instance: inst}
			return err
		}
		p.ID, p.ExpectVersion, p.From = id, inst.Version, inst.Status
		out, err := m.store.Transition(ctx, *p)
		switch {
		case err == nil:
			m.log.InfoContext(ctx, name+" accepted", "instance_id", id, "outbox_id", p.Outbox.ID,
				"request_id", requestID, "op", p.Outbox.Op, "from", inst.Status)
			res = Result{Instance: out, Enqueued: true}
			return nil
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("container %s: %w", id, ErrNotFound)
		case errors.Is(err, store.ErrConflict) && ifMatch != nil:
			return fmt.Errorf("instance %s changed: %w", id, ErrVersion)
		case errors.Is(err, store.ErrConflict):
			return err // a worker moved it; decide again on fresh state
		default:
			return fmt.Errorf("%s of %s: %w", name, id, err)
		}
	})
	if errors.Is(err, store.ErrConflict) {
		err = fmt.Errorf("%s of %s: %w", name, id, err)
	}
	return res, err
}
