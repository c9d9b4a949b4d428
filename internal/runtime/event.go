package runtime

import "time"

// EventKind is a lifecycle change a runtime reports.
type EventKind string

// Event kinds. An OOM kill is reported as EventOOM followed by EventExited.
// EventPaused and EventResumed are reported only by a runtime that pauses
// (Pauser), and only while the container is still as they say when the
// watch reports them (a replayed pause of a container resumed since is
// dropped), so the state loop may take them for the present state.
const (
	EventStarted   EventKind = "started"
	EventExited    EventKind = "exited"
	EventOOM       EventKind = "oom"
	EventDestroyed EventKind = "destroyed"
	EventPaused    EventKind = "paused"
	EventResumed   EventKind = "resumed"
)

// Event is one lifecycle change of one of berth's containers, as Watch
// reports it; the manager's OnEvent turns it into an FSM transition.
type Event struct {
	InstanceID string    `json:"instance_id"`
	Kind       EventKind `json:"kind"`
	// ExitCode is set on EventExited.
	ExitCode *int `json:"exit_code,omitempty"`
	// Time is, for a start or an exit, when the runtime records that the
	// run began or ended (what Inspect gives as StartedAt and FinishedAt),
	// not when the event was emitted: the manager compares it with times
	// the workers and the reconciler read by Inspect.
	Time time.Time `json:"time"`
	// RunStartedAt is, on EventExited, when the run that ended had
	// started, in the same clock as an EventStarted's Time (nil when the
	// runtime cannot say): it tells the exit of the run berth recorded
	// from a late one of an earlier run, which Time cannot, since an
	// engine may stamp a quick exit before the start of the same run
	// (Docker records StartedAt when its start bookkeeping ends and
	// FinishedAt when the process ended).
	RunStartedAt *time.Time `json:"run_started_at,omitempty"`
	Node         string     `json:"node"`
	RuntimeID    string     `json:"runtime_id,omitempty"`
}
