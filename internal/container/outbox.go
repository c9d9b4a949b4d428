package container

import "time"

// Op is an operation a worker carries out on the runtime.
type Op string

// The four operations of the seed.
const (
	OpCreate Op = "create"
	OpStart  Op = "start"
	OpStop   Op = "stop"
	OpDelete Op = "delete"
)

// The group cleanup operations: a group policy (stop or delete) applied to
// one member. They are written in the same transaction as what asked for
// them (the member's exit, a group finish or reset), and the worker turns
// each into the member's stop or delete request once the member is not in
// the middle of another operation, so a policy survives a crash and is
// applied once.
const (
	OpCleanupStop   Op = "cleanup_stop"
	OpCleanupDelete Op = "cleanup_delete"
)

// Valid reports whether op is one of the four operations or a cleanup.
func (op Op) Valid() bool {
	switch op {
	case OpCreate, OpStart, OpStop, OpDelete, OpCleanupStop, OpCleanupDelete:
		return true
	}
	return false
}

// Cleanup reports whether op applies a group policy rather than a user's
// request: its failure never fails the member.
func (op Op) Cleanup() bool { return op == OpCleanupStop || op == OpCleanupDelete }

// OutboxState is where an outbox item is in its delivery.
type OutboxState string

// Outbox states: written with the instance change (pending), handed to a
// queue (dispatched), finished by a worker (done), given up after the last
// attempt (failed).
const (
	OutboxPending    OutboxState = "pending"
	OutboxDispatched OutboxState = "dispatched"
	OutboxDone       OutboxState = "done"
	OutboxFailed     OutboxState = "failed"
)

// OutboxItem is an operation request written in the same transaction as the
// instance change that asked for it. The dispatcher turns it into a queue
// message; the worker marks it done.
type OutboxItem struct {
	ID              string      `json:"id"`
	InstanceID      string      `json:"instance_id"`
	Op              Op          `json:"op"`
	InstanceVersion int64       `json:"instance_version"`
	RequestID       string      `json:"request_id,omitempty"`
	TraceContext    string      `json:"trace_context,omitempty"`
	State           OutboxState `json:"state"`
	Attempts        int         `json:"attempts"`
	LastError       string      `json:"last_error,omitempty"`
	CreatedAt       time.Time   `json:"created_at"`
	UpdatedAt       time.Time   `json:"updated_at"`
	DispatchedAt    *time.Time  `json:"dispatched_at,omitempty"`
}
