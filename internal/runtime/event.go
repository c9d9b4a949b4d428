package runtime

import "time"

// EventKind is a lifecycle change a runtime reports.
type EventKind string

// Event kinds. An OOM kill is reported as EventOOM followed by EventExited.
const (
	EventStarted   EventKind = "started"
	EventExited    EventKind = "exited"
	EventOOM       EventKind = "oom"
	EventDestroyed EventKind = "destroyed"
)

// Event is one lifecycle change of one of berth's containers, as Watch
// reports it; the manager's OnEvent turns it into an FSM transition.
type Event struct {
	InstanceID string    `json:"instance_id"`
	Kind       EventKind `json:"kind"`
	// ExitCode is set on EventExited.
	ExitCode  *int      `json:"exit_code,omitempty"`
	Time      time.Time `json:"time"`
	Node      string    `json:"node"`
	RuntimeID string    `json:"runtime_id,omitempty"`
}
