package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// cleanupStep is what a group policy asks of a member in a given status.
type cleanupStep int

const (
	stepNothing   cleanupStep = iota // already where the policy leads
	stepWait                         // in the middle of an operation: wait for it to settle
	stepStop                         // request a stop (stop_pending + stop item)
	stepDelete                       // request a delete (delete_pending + delete item)
	stepCancel                       // never created: cancel (failed), nothing will run
	stepHalt                         // failed: make sure its container is not running
	stepRestarted                    // a node policy whose member was started again since
)

// cleanupStepFor decides a policy's step for a member's status. A node
// policy was written with the member's exit or failure: if the member is
// no longer stopped or failed it was started again since, and the policy
// belongs to a run that is over (its next exit writes a policy of its own).
// For a group policy, a member being created or started is waited for (its
// worker holds it), so that a policy never races the operation in flight.
func cleanupStepFor(op container.Op, s fsm.Status) cleanupStep {
	switch {
	case s == fsm.DeletePending || s == fsm.Deleting:
		return stepNothing
	case op.NodePolicy() && !s.Terminal():
		return stepRestarted
	case s == fsm.Creating || s == fsm.StartPending || s == fsm.Starting:
		return stepWait
	}
	if op.Deletes() {
		return stepDelete
	}
	switch s {
	case fsm.Pending:
		return stepCancel
	case fsm.Running, fsm.Paused:
		return stepStop
	case fsm.Failed:
		return stepHalt
	}
	return stepNothing // stop_pending, stopping, stopped
}

// cleanup applies a node or group policy (cleanup_*, group_*) to one
// member. The stop or delete request it makes is written in the same
// transaction that marks the cleanup item done, so a redelivery, or a crash
// at any point, leads to one request, never two.
func (w *Worker) cleanup(ctx context.Context, log *slog.Logger, msg outbox.Message) error {
	deadline := w.now().Add(w.timeout)
	poll := w.poll
	for conflicts := 0; ; {
		inst, err := w.store.GetInstance(ctx, msg.InstanceID)
		if errors.Is(err, store.ErrNotFound) {
			return stale("member already deleted")
		}
		if err != nil {
			return fmt.Errorf("reading instance: %w", err)
		}
		step := cleanupStepFor(msg.Op, inst.Status)
		switch step {
		case stepNothing:
			return stale("member is %s: nothing left for %s", inst.Status, msg.Op)
		case stepRestarted:
			return stale("member is %s: started again since the exit %s followed", inst.Status, msg.Op)
		case stepWait:
			if !w.now().Before(deadline) {
				return runtime.Errorf(runtime.ErrUnavailable, string(msg.Op), inst.ID, "", "member still %s after %s", inst.Status, w.timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
			poll = min(poll*2, 2*time.Second)
			continue
		case stepHalt:
			if err := w.halt(ctx, inst); err != nil {
				return err
			}
		}
		// The step (and a halt) was decided on this version: written through
		// the manager only while the member is still at it, else decided again.
		p := cleanupWrite(inst, step, msg, w.now().UTC())
		_, err = w.m.Advance(ctx, inst.ID, func(cur container.Instance) (*store.TransitionParams, error) {
			if cur.Version != inst.Version {
				return nil, errMemberMoved
			}
			return &p, nil
		})
		switch {
		case err == nil:
			log.InfoContext(ctx, "group policy applied", "from", inst.Status, "step", stepName[step])
			return nil
		case errors.Is(err, store.ErrNotFound):
			return stale("member deleted meanwhile")
		case (errors.Is(err, store.ErrConflict) || errors.Is(err, errMemberMoved)) && conflicts < manager.MaxConflictRetries:
			conflicts++
			continue
		default:
			return err
		}
	}
}

// errMemberMoved: the member changed after the step was decided.
var errMemberMoved = errors.New("member moved since the cleanup step was decided")

var stepName = map[cleanupStep]string{stepStop: "stop", stepDelete: "delete", stepCancel: "cancel", stepHalt: "halt"}

// halt stops a failed member's container if it still runs (a create that
// timed out, a start that failed after the process began).
func (w *Worker) halt(ctx context.Context, inst container.Instance) error {
	rt, err := w.rt.ForInstance(inst)
	if err != nil {
		return err
	}
	if err := rt.Stop(ctx, runtime.RefOf(inst), w.grace); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	return nil
}

// cleanupWrite is the one conditional write a step makes, with the cleanup
// item completed in it.
func cleanupWrite(inst container.Instance, step cleanupStep, msg outbox.Message, now time.Time) store.TransitionParams {
	p := store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, CompleteOutboxID: msg.OutboxID}
	request := func(to fsm.Status, op container.Op, ev, what string) {
		p.To = to
		p.Outbox = &container.OutboxItem{
			ID: container.NewID(), InstanceID: inst.ID, Op: op, InstanceVersion: inst.Version + 1,
			RequestID: msg.RequestID, TraceContext: msg.TraceContext, State: container.OutboxPending, CreatedAt: now, UpdatedAt: now,
		}
		reason := what + manager.PolicyRequested
		p.Update = func(i *container.Instance) { i.StatusReason = reason }
		p.Event = &container.Event{Type: ev, From: inst.Status, To: to, At: now, Message: reason, Actor: container.ActorSystem}
	}
	switch step {
	case stepStop:
		request(fsm.StopPending, container.OpStop, container.EventStopRequested, "stop")
	case stepDelete:
		request(fsm.DeletePending, container.OpDelete, container.EventDeleteRequested, "delete")
	case stepCancel:
		p.To = fsm.Failed
		reason := "cancelled by the group's cleanup policy before it was created"
		p.Update = func(i *container.Instance) { i.StatusReason, i.FinishedAt = reason, &now }
		p.Event = &container.Event{Type: container.EventCancelled, From: inst.Status, To: fsm.Failed, At: now, Message: reason, Actor: container.ActorSystem}
	case stepHalt:
		p.To = fsm.Failed
		p.Event = &container.Event{Type: container.EventStopped, From: fsm.Failed, To: fsm.Failed, At: now,
			Message: "container stopped by the group's cleanup policy", Actor: container.ActorSystem}
	}
	return p
}
