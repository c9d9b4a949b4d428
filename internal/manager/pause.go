package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// A pause or a resume is asked without a status of its own in between: the
// request writes the operation's outbox item and an event, the instance
// staying running (or paused) until the worker has frozen (or thawed) the
// container and records running → paused (paused → running), or the state
// loop records it first from the runtime's event. The freezer acts at once,
// so an intermediate status (pause_pending, …) would add two statuses, their
// stuck policies and their races with stop and delete to the FSM for a step
// that takes milliseconds; the outbox item alone carries the request
// through a crash. A second pause asked before the first is carried out is
// accepted and finds the container paused (done); a stop or delete asked
// meanwhile wins (the pause's worker finds the instance moved on, and a stop
// or delete of a paused container stops or removes it).

// UnsupportedError is an operation the instance's runtime cannot carry out
// (a pause of a Kubernetes Pod): 409, naming the runtime.
type UnsupportedError struct {
	Op      string
	Runtime string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("cannot %s a container on the %s runtime: it has no way to %s a container", e.Op, e.Runtime, e.Op)
}

// freezeOp is a pause or a resume: the status it comes from and leads to,
// and the events of its request and of its end.
type freezeOp struct {
	name            string
	op              container.Op
	from, to        fsm.Status
	requestEv, done string
}

var (
	pauseOp = freezeOp{name: "pause", op: container.OpPause, from: fsm.Running, to: fsm.Paused,
		requestEv: container.EventPauseRequested, done: container.EventPaused}
	resumeOp = freezeOp{name: "resume", op: container.OpResume, from: fsm.Paused, to: fsm.Running,
		requestEv: container.EventResumeRequested, done: container.EventResumed}
)

// Pause asks for a running container's processes to be frozen, their memory
// kept. Already paused: nothing to do (Enqueued false). Any status from
// which the FSM does not lead to paused, a running instance whose container
// has exited and awaits its restart (restart_at set), and an instance of a
// runtime that cannot pause (container.RuntimePauses) are refused.
func (m *Manager) Pause(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (Result, error) {
	return m.freeze(ctx, c, id, ifMatch, requestID, pauseOp)
}

// Resume asks for a paused container to carry on where it was. Already
// running: nothing to do.
func (m *Manager) Resume(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (Result, error) {
	return m.freeze(ctx, c, id, ifMatch, requestID, resumeOp)
}

func (m *Manager) freeze(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string, op freezeOp) (Result, error) {
	return m.userWrite(ctx, c, id, ifMatch, requestID, op.name, func(inst container.Instance) (*store.TransitionParams, error) {
		if kind := inst.RuntimeKind(); !container.RuntimePauses(kind) {
			return nil, &UnsupportedError{Op: op.name, Runtime: kind}
		}
		if err := freezable(inst, op); err != nil || inst.Status == op.to {
			return nil, err
		}
		p, _ := requestWrite(ctx, inst, request{op: op.op, to: inst.Status, event: op.requestEv,
			message: op.name + " requested", actor: c.Actor(), requestID: requestID, at: m.now().UTC()})
		return p, nil
	})
}

// freezable is nil when op may be asked of inst (its status is op's from or
// already op's to), and the StateError that refuses it otherwise.
func freezable(inst container.Instance, op freezeOp) error {
	switch {
	case inst.Status == op.to && !(op.to == fsm.Running && inst.RestartAt != nil):
		return nil
	case inst.Status != op.from || !fsm.Can(op.from, op.to):
		return &StateError{Op: op.name, Current: inst.Status}
	case inst.RestartAt != nil:
		return &StateError{Op: op.name, Current: inst.Status, Why: "its container has exited and a restart is scheduled"}
	}
	return nil
}

// Frozen completes a pause (pause true: running → paused) or a resume
// (paused → running) whose runtime call succeeded, completing its outbox
// item in the same write. An instance already there (the state loop saw the
// runtime's event first) is left as it is; one in any other status moved on
// (a stop or delete asked meanwhile, which deals with the container as it
// finds it): ErrMoved.
func (m *Manager) Frozen(ctx context.Context, id, outboxID string, pause bool, at time.Time) error {
	op := resumeOp
	if pause {
		op = pauseOp
	}
	at = m.orNow(at)
	_, err := m.advance(ctx, id, func(cur container.Instance) (*store.TransitionParams, error) {
		switch {
		case cur.Status == op.to:
			return nil, nil
		case cur.Status != op.from || cur.RestartAt != nil:
			return nil, moved("instance is %s, no longer %s", cur.Status, op.from)
		}
		reason := frozenReason(op.to)
		return &store.TransitionParams{To: op.to,
			Update:           func(in *container.Instance) { in.StatusReason = reason },
			Event:            &container.Event{Type: op.done, From: op.from, To: op.to, At: at, Message: reason, Actor: container.ActorSystem},
			CompleteOutboxID: outboxID,
		}, nil
	})
	return err
}

// frozenReason is the status_reason of a pause's or a resume's end.
func frozenReason(to fsm.Status) string {
	if to == fsm.Paused {
		return "paused"
	}
	return "running"
}

// frozenTarget is where a runtime's report of a pause or a resume takes an
// instance in status s. It moves only running ⇄ paused (a pause behind
// berth's back is recorded as berth's own); in any other status berth is
// making, starting, stopping or deleting the container, and that worker's
// report is the one that counts (ok=false: expected). A runtime reports a
// pause only while the container is still paused (runtime.EventPaused), and
// the reconciler from its listing, so both speak of the present.
func frozenTarget(s fsm.Status, kind ObservationKind) (fsm.Status, string, bool) {
	switch {
	case s != fsm.Running && s != fsm.Paused:
		return s, "", false
	case kind == ObservedPaused:
		return fsm.Paused, container.EventPaused, true
	}
	return fsm.Running, container.EventResumed, true
}
