package manager

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// CleanupStep is what a group policy (a cleanup_* or group_* item) asks of
// a member in its current status.
type CleanupStep int

// The steps of a group policy.
const (
	StepNothing   CleanupStep = iota // already where the policy leads
	StepWait                         // in the middle of an operation: wait for it to settle
	StepStop                         // request a stop (stop_pending + stop item)
	StepDelete                       // request a delete (delete_pending + delete item)
	StepCancel                       // never created: cancel (failed), nothing will run
	StepHalt                         // failed: make sure its container is not running
	StepRestarted                    // a node policy whose member was started again since
)

var stepNames = map[CleanupStep]string{StepNothing: "nothing", StepWait: "wait", StepStop: "stop", StepDelete: "delete",
	StepCancel: "cancel", StepHalt: "halt", StepRestarted: "restarted"}

// String names the step (for logs).
func (s CleanupStep) String() string { return stepNames[s] }

// cleanupStepFor decides a policy's step for a member's status. A node
// policy was written with the member's exit or failure: if the member is
// no longer stopped or failed it was started again since, and the policy
// belongs to a run that is over (its next exit writes a policy of its own).
// For a group policy, a member being created or started is waited for (its
// worker holds it), so that a policy never races the operation in flight.
func cleanupStepFor(op container.Op, s fsm.Status) CleanupStep {
	switch {
	case s == fsm.DeletePending || s == fsm.Deleting:
		return StepNothing
	case op.NodePolicy() && !s.Terminal():
		return StepRestarted
	case s == fsm.Creating || s == fsm.StartPending || s == fsm.Starting:
		return StepWait
	}
	if op.Deletes() {
		return StepDelete
	}
	switch s {
	case fsm.Pending:
		return StepCancel
	case fsm.Running, fsm.Paused:
		return StepStop
	case fsm.Failed:
		return StepHalt
	}
	return StepNothing // stop_pending, stopping, stopped
}

// Cleanup is a group policy's outbox item as a worker received it.
type Cleanup struct {
	InstanceID string
	Op         container.Op
	OutboxID   string
	RequestID  string
	// At is when the worker applies it (zero: the manager's clock).
	At time.Time
}

// Halter stops a failed member's container if it still runs; the
// StepHalt of a policy calls it before its write. It must be safe to call
// again (a lost race decides the step again).
type Halter func(ctx context.Context, inst container.Instance) error

// ApplyCleanup carries out one group policy item on its member: it decides
// the step from the member's status and writes it, with the item completed
// in the same write, so a redelivery or a crash at any point leads to one
// request, never two. A lost race decides the step again on fresh state.
// StepNothing, StepRestarted and StepWait write nothing (the caller waits
// and calls again for StepWait); StepHalt calls halt first. It returns the
// step taken and the status it was decided on; a member gone is
// store.ErrNotFound. Trace: ctx's (WithTrace) goes on the request's item.
func (m *Manager) ApplyCleanup(ctx context.Context, c Cleanup, halt Halter) (CleanupStep, fsm.Status, error) {
	var (
		step CleanupStep
		from fsm.Status
	)
	err := retryOnConflict(func() error {
		inst, err := m.store.GetInstance(ctx, c.InstanceID)
		if err != nil {
			return err
		}
		step, from = cleanupStepFor(c.Op, inst.Status), inst.Status
		var p *store.TransitionParams
		at := m.orNow(c.At)
		switch step {
		case StepNothing, StepRestarted, StepWait:
			return nil
		case StepStop:
			p, _ = requestWrite(ctx, inst, request{op: container.OpStop, to: fsm.StopPending, event: container.EventStopRequested,
				reason: "stop" + PolicyRequested, actor: container.ActorSystem, requestID: c.RequestID, at: at})
		case StepDelete:
			p, _ = requestWrite(ctx, inst, request{op: container.OpDelete, to: fsm.DeletePending, event: container.EventDeleteRequested,
				reason: "delete" + PolicyRequested, actor: container.ActorSystem, requestID: c.RequestID, at: at})
		case StepCancel:
			p = cancelWrite(inst, "cancelled by the group's cleanup policy before it was created", container.ActorSystem, at)
		case StepHalt:
			if err := halt(ctx, inst); err != nil {
				return err
			}
			p = &store.TransitionParams{To: fsm.Failed,
				Event: &container.Event{Type: container.EventStopped, From: fsm.Failed, To: fsm.Failed, At: at,
					Message: "container stopped by the group's cleanup policy", Actor: container.ActorSystem}}
		}
		// Decided (and halted) on this version: written only while the
		// member is still at it, else decided again.
		p.ID, p.ExpectVersion, p.From, p.CompleteOutboxID = inst.ID, inst.Version, inst.Status, c.OutboxID
		_, err = m.store.Transition(ctx, *p)
		return err
	})
	return step, from, err
}
