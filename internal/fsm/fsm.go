// Package fsm holds the container lifecycle state machine:
// the twelve statuses and the table of allowed transitions between them.
// Every status change in berth goes through Check, in every store backend,
// worker and reconciler, so the table here is the single source of truth.
package fsm

import (
	"errors"
	"fmt"
)

// Status is a container instance's lifecycle status.
type Status string

// The statuses, with the names stored instances carry. Paused is a running
// container whose processes are frozen, memory kept (POST /pause; running ⇄
// paused, with no status between: the request is an outbox item on the
// unchanged status, see internal/manager pause.go).
const (
	Pending       Status = "pending"
	Creating      Status = "creating"
	Running       Status = "running"
	Paused        Status = "paused"
	StopPending   Status = "stop_pending"
	Stopping      Status = "stopping"
	Stopped       Status = "stopped"
	StartPending  Status = "start_pending"
	Starting      Status = "starting"
	DeletePending Status = "delete_pending"
	Deleting      Status = "deleting"
	Failed        Status = "failed"
)

// ErrInvalidTransition is matched (errors.Is) by every error Check returns.
var ErrInvalidTransition = errors.New("invalid transition")

// All lists every status in lifecycle order.
var All = []Status{
	Pending, Creating, Running, Paused, StopPending, Stopping, Stopped,
	StartPending, Starting, DeletePending, Deleting, Failed,
}

// transitions is the table of allowed transitions: from each status, the
// statuses it may move to. Anything not listed is ErrInvalidTransition.
var transitions = map[Status][]Status{
	Pending:       {Creating, Failed, DeletePending},
	Creating:      {Running, Failed, Stopped, DeletePending},
	Running:       {Stopped, StopPending, StartPending, DeletePending, Paused, Failed},
	Paused:        {Running, Stopped, StopPending, StartPending, DeletePending, Failed},
	StopPending:   {Stopping, DeletePending, Failed},
	Stopping:      {Stopped, DeletePending, Failed},
	StartPending:  {Starting, Failed},
	Starting:      {Running, Failed},
	DeletePending: {Deleting, Failed},
	Deleting:      {Stopped, Failed},
	Stopped:       {Running, StartPending, DeletePending},
	Failed:        {DeletePending},
}

var allowed = func() map[[2]Status]bool {
	m := make(map[[2]Status]bool)
	for from, tos := range transitions {
		for _, to := range tos {
			m[[2]Status{from, to}] = true
		}
	}
	return m
}()

// TransitionError names both ends of a forbidden transition.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("invalid transition from %q to %q", e.From, e.To)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

// Check returns nil when the table allows from → to, and a *TransitionError
// otherwise (also for unknown statuses and for from == to: a status never
// transitions to itself, callers treat a repeat as a no-op before asking).
func Check(from, to Status) error {
	if allowed[[2]Status{from, to}] {
		return nil
	}
	return &TransitionError{From: from, To: to}
}

// Can reports whether from → to is allowed.
func Can(from, to Status) bool { return allowed[[2]Status{from, to}] }

// Valid reports whether s is one of the twelve statuses.
func (s Status) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Terminal reports whether s ends a lifecycle (stopped, failed):
// nothing runs and nothing is in flight. A terminal instance may still be
// started again or deleted by a new request.
func (s Status) Terminal() bool { return s == Stopped || s == Failed }

// HoldsCreateSlot reports whether s holds a create admission slot: the create has
// been accepted and has not finished yet (pending, creating).
func (s Status) HoldsCreateSlot() bool { return s == Pending || s == Creating }

// Next returns the statuses reachable from s in one step.
func Next(s Status) []Status { return append([]Status(nil), transitions[s]...) }
