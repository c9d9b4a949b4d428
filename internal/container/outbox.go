package container

import (
	"slices"
	"time"
)

// Op is an operation a worker carries out on the runtime.
type Op string

// The four operations a worker carries out on a runtime.
const (
	OpCreate Op = "create"
	OpStart  Op = "start"
	OpStop   Op = "stop"
	OpDelete Op = "delete"
)

// The group cleanup operations: a group policy (stop or delete) applied to
// one member, written in the same transaction as what asked for it, which
// the worker turns into the member's stop or delete request. A node policy
// (cleanup_*) follows a member's own exit or failure and applies only while
// the member rests where that left it; a group policy (group_*) follows a
// group finish or reset and applies to the member whatever it is doing,
// once its operation in flight has settled.
const (
	OpCleanupStop   Op = "cleanup_stop"
	OpCleanupDelete Op = "cleanup_delete"
	OpGroupStop     Op = "group_stop"
	OpGroupDelete   Op = "group_delete"
)

// Ops are every operation a worker carries out: the four, pause and
// resume, the cleanups and webhook deliveries.
func Ops() []Op {
	return []Op{OpCreate, OpStart, OpStop, OpDelete, OpPause, OpResume, OpCleanupStop, OpCleanupDelete, OpGroupStop,
		OpGroupDelete, OpDeliver}
}

// Valid reports whether op is one of the four operations or a cleanup.
func (op Op) Valid() bool { return slices.Contains(Ops(), op) }

// Cleanup reports whether op applies a group policy rather than a user's
// request: its failure never fails the member.
func (op Op) Cleanup() bool { return op.NodePolicy() || op == OpGroupStop || op == OpGroupDelete }

// NodePolicy reports whether op is a node policy (cleanup_*).
func (op Op) NodePolicy() bool { return op == OpCleanupStop || op == OpCleanupDelete }

// Deletes reports whether a cleanup op deletes (else it stops).
func (op Op) Deletes() bool { return op == OpCleanupDelete || op == OpGroupDelete }

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
	ID         string `json:"id"`
	InstanceID string `json:"instance_id"`
	// Owner is the instance's owner (the store sets it): the create
	// queue of `berth serve` takes creates round-robin across owners by it.
	Owner           string      `json:"owner,omitempty"`
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
	// Delivery is set on OpDeliver items only: the change to deliver.
	Delivery *Delivery `json:"delivery,omitempty"`
}
