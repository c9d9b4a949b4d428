package container

import (
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// Event types recorded in an instance's history.
const (
	EventCreateRequested  = "ContainerCreateRequested"
	EventCreating         = "ContainerCreating"
	EventStarted          = "ContainerStarted"
	EventExited           = "ContainerExited"
	EventFailed           = "ContainerFailed"
	EventStopRequested    = "ContainerStopRequested"
	EventStopping         = "ContainerStopping"
	EventStopped          = "ContainerStopped"
	EventStartRequested   = "ContainerStartRequested"
	EventStarting         = "ContainerStarting"
	EventDeleteRequested  = "ContainerDeleteRequested"
	EventDeleting         = "ContainerDeleting"
	EventDeleted          = "ContainerDeleted"
	EventTransitionReject = "TransitionRejected"
	// EventCleanupRequested records that a group policy was asked for a
	// member (by a group finish or reset); the policy's own stop or delete
	// request follows as its usual events.
	EventCleanupRequested = "ContainerCleanupRequested"
	// EventCancelled records that a queued member was cancelled before its
	// container was made (a group finish).
	EventCancelled = "ContainerCancelled"
	// EventReconciled: the reconciler brought the runtime in line with the
	// instance (stopped a failed instance's container that was started
	// behind berth's back); the status did not change.
	EventReconciled = "ContainerReconciled"
	// EventLifetimeExtended records an extension of the instance's
	// lifetime (its new expires_at in the message); the status did not
	// change.
	EventLifetimeExtended = "ContainerLifetimeExtended"
	// EventRestartScheduled records a container's exit that its restart
	// policy answers with a restart (its exit code and last words, the
	// restart's number and time in the message); the status did not
	// change: the instance stays running until the restart's start is
	// asked at its restart_at.
	EventRestartScheduled = "ContainerRestartScheduled"
)

// Event is one entry of an instance's history. Seq is assigned by the store:
// 1, 2, 3, … per instance, without gaps.
type Event struct {
	InstanceID string     `json:"instance_id"`
	Seq        int64      `json:"seq"`
	Type       string     `json:"type"`
	From       fsm.Status `json:"from,omitempty"`
	To         fsm.Status `json:"to,omitempty"`
	At         time.Time  `json:"at"`
	Message    string     `json:"message,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	// Actor is who caused the event: a user id for requests (a service's
	// when it acts on behalf of the owner), "berth" for what the workers
	// and the reconciler observed. The first event's actor is the owner, or
	// its OnBehalfOf is (Owner), which is how a deleted instance's history
	// stays readable by its owner alone.
	Actor string `json:"actor,omitempty"`
	// OnBehalfOf, on an event a service caused acting for a user, is that
	// user: on the first event, the owner the service created for.
	OnBehalfOf string `json:"on_behalf_of,omitempty"`
	// LastWords, on the event of a container's end, are the last lines it
	// printed (see LastWords for when).
	LastWords *LastWords `json:"last_words,omitempty"`
}

// Owner is who the event was for: OnBehalfOf, else Actor. On an
// instance's first event that is its owner.
func (e Event) Owner() string {
	if e.OnBehalfOf != "" {
		return e.OnBehalfOf
	}
	return e.Actor
}

// ActorSystem is the Actor of events berth itself records.
const ActorSystem = "berth"

// Events of a command run in a running container (POST
// /api/containers/{id}/exec): the history is the exec audit log. Each says
// who (Actor) and what (the command, in Message); the finish also the exit
// code (ExitCode) and how long it ran. Neither carries the command's
// output, its stdin or its env values. The status does not change.
const (
	// EventExecStarted is recorded before the command runs: an exec
	// that cannot be recorded is not run.
	EventExecStarted = "ContainerExecStarted"
	// EventExecFinished is recorded once the command ended, timed out
	// (and was killed) or could not be run.
	EventExecFinished = "ContainerExecFinished"
)

// ExecMarkerEnv is the environment variable berth sets on an exec's
// command, with a value unique to that exec, so that at its timeout the
// command's processes, and their children, can be found and killed in the
// container. A request's env may not set it.
const ExecMarkerEnv = "BERTH_EXEC_ID"
