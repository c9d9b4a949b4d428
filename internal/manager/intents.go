package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// The intents are what the workers and the reconciler ask of an instance.
// They name what the caller means (claim, fail, requeue, …); the manager
// builds the store write, applies the group policy that comes with it and
// retries lost races by its one rule (MaxConflictRetries), so no caller
// builds a write of its own. Every intent takes the time it happened in
// the caller's clock (zero: the manager's).

// ErrMoved is an intent that no longer applies: the instance is no longer
// at the version the caller read, or no longer in a status the intent
// needs. Nothing was written. Its message says what the instance is now.
var ErrMoved = errors.New("instance moved")

// movedError is ErrMoved with what the instance is now.
type movedError struct{ why string }

func (e movedError) Error() string        { return e.why }
func (e movedError) Is(target error) bool { return target == ErrMoved }

func moved(format string, args ...any) error { return movedError{fmt.Sprintf(format, args...)} }

// atVersion is the version guard of the intents decided on a version the
// caller read (read 0: none).
func atVersion(cur container.Instance, read int64) error {
	if read != 0 && cur.Version != read {
		return moved("instance %s is at version %d, not %d as read", cur.ID, cur.Version, read)
	}
	return nil
}

// opStatuses are, for each operation, the status its request leaves the
// instance in, the status its worker moves it to when it takes it up, and
// the events of the two moves.
var opStatuses = map[container.Op]struct {
	requested, inProgress    fsm.Status
	requestEvent, claimEvent string
}{
	container.OpCreate: {fsm.Pending, fsm.Creating, container.EventCreateRequested, container.EventCreating},
	container.OpStart:  {fsm.StartPending, fsm.Starting, container.EventStartRequested, container.EventStarting},
	container.OpStop:   {fsm.StopPending, fsm.Stopping, container.EventStopRequested, container.EventStopping},
	container.OpDelete: {fsm.DeletePending, fsm.Deleting, container.EventDeleteRequested, container.EventDeleting},
}

// WaitsFor is the operation an instance in status s waits for: the one
// whose request left it there or whose worker has taken it up (pending
// and creating wait for a create, say); ok=false for a status that waits
// for none.
func WaitsFor(s fsm.Status) (op container.Op, ok bool) {
	for op, st := range opStatuses {
		if s == st.requested || s == st.inProgress {
			return op, true
		}
	}
	return "", false
}

// ClaimItem is a worker taking up op (create, start, stop or delete): the
// instance moves from the status op's request left it in to op's
// in-progress status (pending → creating, say), or is accepted as it is
// when already in progress (a redelivery after a crash). node, when set,
// is recorded with the move. Any other status is ErrMoved; a missing
// instance store.ErrNotFound. It returns the instance as claimed. It also
// marks the outbox item outboxID (the one
// whose message the worker took up; empty: none) dispatched in the same
// write when it is still pending (store.TransitionParams.DispatchOutboxID):
// the local server's dispatcher leaves that mark to the claim, so a create
// costs one durable write less. A claim that finds the instance already
// in progress writes nothing, and marks nothing.
func (m *Manager) ClaimItem(ctx context.Context, id string, op container.Op, node, outboxID string, at time.Time) (container.Instance, error) {
	s, ok := opStatuses[op]
	if !ok {
		return container.Instance{}, fmt.Errorf("claim of %s: %s is not an operation a worker claims", id, op)
	}
	at = m.orNow(at)
	return m.advance(ctx, id, func(inst container.Instance) (*store.TransitionParams, error) {
		switch inst.Status {
		case s.inProgress:
			return nil, nil
		case s.requested:
		default:
			return nil, moved("instance is %s, not %s", inst.Status, s.requested)
		}
		return &store.TransitionParams{To: s.inProgress,
			Update: func(in *container.Instance) {
				if node != "" {
					in.RuntimeNodeName = node
				}
			},
			Event:            &container.Event{Type: s.claimEvent, From: s.requested, To: s.inProgress, At: at, Actor: container.ActorSystem},
			DispatchOutboxID: outboxID,
		}, nil
	})
}

// Placed records where a create made the instance's container (its
// runtime id and node) while the instance is still creating; ErrMoved
// once it is not.
func (m *Manager) Placed(ctx context.Context, id, runtimeID, node string) error {
	_, err := m.advance(ctx, id, func(cur container.Instance) (*store.TransitionParams, error) {
		if cur.Status != fsm.Creating {
			return nil, moved("instance is %s, no longer creating", cur.Status)
		}
		return &store.TransitionParams{To: fsm.Creating, Update: func(in *container.Instance) {
			in.RuntimeID, in.RuntimeNodeName = runtimeID, node
		}}, nil
	})
	return err
}

// Stopped completes a stop: stopping → stopped, with the exit code and
// the end time the runtime gave, and the stop's outbox item completed in
// the same write. An instance no longer stopping had its exit recorded by
// the state loop first: nothing is written. words, when not nil, are the
// container's last words, kept with the stop's event: the worker, which
// holds the runtime, reads them (runtime.ReadLastWords).
func (m *Manager) Stopped(ctx context.Context, id, outboxID string, finished time.Time, exit *int, words *container.LastWords, at time.Time) error {
	at = m.orNow(at)
	_, err := m.advance(ctx, id, func(cur container.Instance) (*store.TransitionParams, error) {
		if cur.Status != fsm.Stopping {
			return nil, nil
		}
		return &store.TransitionParams{To: fsm.Stopped,
			Update: func(in *container.Instance) {
				in.FinishedAt, in.ExitCode, in.StatusReason = &finished, exit, "stopped on request"
			},
			Event: &container.Event{Type: container.EventStopped, From: fsm.Stopping, To: fsm.Stopped, At: at, ExitCode: exit,
				Actor: container.ActorSystem, LastWords: words},
			CompleteOutboxID: outboxID,
		}, nil
	})
	return err
}

// Deleted completes a delete whose container is gone: the deleting
// instance is removed, its final event appended and the delete's outbox
// item completed, in one write. ErrMoved when the instance left deleting;
// a missing instance is store.ErrNotFound. words, when not nil, are the
// container's last words, read by the worker before it was removed
// (runtime.ReadLastWords).
func (m *Manager) Deleted(ctx context.Context, id, outboxID string, words *container.LastWords, at time.Time) error {
	at = m.orNow(at)
	return m.remove(ctx, id, func(cur container.Instance) (*store.DeleteParams, error) {
		if cur.Status != fsm.Deleting {
			return nil, moved("instance moved to %s while deleting", cur.Status)
		}
		return &store.DeleteParams{
			Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, At: at, Message: "container and instance removed",
				Actor: container.ActorSystem, LastWords: words},
			CompleteOutboxID: outboxID,
		}, nil
	})
}

// Failure is a Fail intent: why, when, and what guards it.
type Failure struct {
	// Reason is the status_reason (a group policy's note is added to it).
	Reason string
	At     time.Time
	// Version, when not zero, is the version the caller read and decided
	// on: at any other the failure is ErrMoved.
	Version int64
	// While, when not empty, are the statuses in which the failure still
	// speaks for the instance; in any other nothing is written.
	While []fsm.Status
	// LastWords, when set, reads the container's last words, once and only
	// if the instance is failed, to keep them with the failure's event; the
	// caller gives it from the runtime it holds (the manager holds none).
	LastWords LastWordsReader
}

// Fail moves an instance to failed with f.Reason, requesting the group
// policy a failure brings (dag_node_cleanup_on_failed) in the same write.
// An instance already failed, or in a status that cannot fail or is not
// in f.While, is left as it is. It reports whether it failed the instance.
func (m *Manager) Fail(ctx context.Context, id string, f Failure) (bool, error) {
	at, failed := m.orNow(f.At), false
	var (
		words *container.LastWords
		read  bool
	)
	_, err := m.advance(ctx, id, func(inst container.Instance) (*store.TransitionParams, error) {
		failed = false
		if err := atVersion(inst, f.Version); err != nil {
			return nil, err
		}
		if inst.Status == fsm.Failed || !fsm.Can(inst.Status, fsm.Failed) ||
			(len(f.While) > 0 && !slices.Contains(f.While, inst.Status)) {
			return nil, nil
		}
		failed = true
		if !read {
			// Once, whatever the write's retries.
			words, read = m.lastWords(ctx, inst, f.LastWords), true
		}
		p := m.failWrite(ctx, inst, f.Reason, at)
		p.Event.LastWords = words
		return p, nil
	})
	return failed && err == nil, err
}

// Requeue asks again for the operation an instance's status waits for
// (op), with a fresh outbox item, the instance unchanged but for
// status_reason (and updated_at, which restarts its stuck timeout).
// It is decided on inst as the caller read it: ErrMoved at any other
// version. It returns the new item's id.
func (m *Manager) Requeue(ctx context.Context, inst container.Instance, op container.Op, reason, requestID string, at time.Time) (string, error) {
	s, ok := opStatuses[op]
	if !ok {
		return "", fmt.Errorf("requeue of %s: %s is not an operation a worker claims", inst.ID, op)
	}
	at = m.orNow(at)
	var itemID string
	_, err := m.advance(ctx, inst.ID, func(cur container.Instance) (*store.TransitionParams, error) {
		if err := atVersion(cur, inst.Version); err != nil {
			return nil, err
		}
		p, item := requestWrite(ctx, cur, request{op: op, to: cur.Status, event: s.requestEvent, reason: reason,
			actor: container.ActorSystem, requestID: requestID, at: at})
		itemID = item.ID
		return p, nil
	})
	return itemID, err
}
