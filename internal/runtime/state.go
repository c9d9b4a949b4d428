package runtime

import (
	"time"

	"github.com/berth-io/berth/internal/container"
)

// Phase is where a container is in its life on the runtime, in words every
// runtime can map to.
type Phase string

// Phases. Exited covers a process that ended by itself, was stopped or was
// killed; ExitCode and OOMKilled tell which.
const (
	PhaseCreated    Phase = "created"
	PhaseRunning    Phase = "running"
	PhasePaused     Phase = "paused"
	PhaseRestarting Phase = "restarting"
	PhaseRemoving   Phase = "removing"
	PhaseExited     Phase = "exited"
	PhaseDead       Phase = "dead"
	PhaseUnknown    Phase = "unknown"
)

// Active reports whether a container in this phase holds a place on its
// node (counts towards the node's capacity).
func (p Phase) Active() bool {
	switch p {
	case PhaseCreated, PhaseRunning, PhasePaused, PhaseRestarting:
		return true
	}
	return false
}

// State is a container as the runtime sees it.
type State struct {
	Ref
	// Name is the runtime object's name (ObjectName of the instance id).
	Name  string `json:"name"`
	Phase Phase  `json:"phase"`
	// ExitCode is set once the process has ended.
	ExitCode *int `json:"exit_code,omitempty"`
	// OOMKilled is true when the kernel killed the process for exceeding
	// its memory limit.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// Error is the runtime's own message about a failure to start.
	Error      string            `json:"error,omitempty"`
	Image      string            `json:"image,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	StartedAt  *time.Time        `json:"started_at,omitempty"`
	FinishedAt *time.Time        `json:"finished_at,omitempty"`
	// Endpoints are where the container's published ports answer, set
	// while it runs (PhaseRunning, PhasePaused) and empty otherwise,
	// ordered by port and protocol. Inspect and List report them alike.
	Endpoints []container.Endpoint `json:"endpoints,omitempty"`
}
