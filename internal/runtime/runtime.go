package runtime

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// Runtime runs berth's containers on one kind of infrastructure: a set of
// Docker hosts, or Kubernetes clusters. A node is one place a runtime can
// put a container (a Docker host, a cluster); its name is what berth records
// as the instance's runtime_node_name.
//
// The contract every implementation keeps:
//
//   - Idempotent by name. A runtime object is named from the instance id
//     (ObjectName), so any call may be repeated after any failure, including
//     a crash between the call and the recording of its result. Create of an
//     object that already exists adopts it when its labels say it belongs to
//     the same instance (and returns ErrConflict otherwise); Start of a
//     running object, Stop of a stopped one and Delete of a missing one
//     succeed.
//   - Placement is decided once. Place chooses a node for an instance that
//     has none; Create on an instance whose RuntimeNodeName is set uses that
//     node and never another. Create on an instance without a node places it
//     itself, first adopting an object that an earlier attempt made on any
//     node the instance may go to, unless the instance is pending: a
//     caller moves it out of pending (recording the node Place chose)
//     before its first Create, so a pending instance has no object and
//     none is looked for (MayHaveObject). The caller records Ref.Node as the
//     instance's runtime_node_name. A Ref without a node (one never
//     recorded) is looked up on every node.
//   - Typed errors. Failures match one of ErrNotFound, ErrConflict,
//     ErrUnavailable (the runtime could not take the request: wait for it),
//     ErrFailed (it answered with a failure that may pass: retry a bounded
//     number of times) or ErrInvalid (can never succeed as asked: do not
//     retry) with errors.Is; an error matching none of them is to be treated
//     as ErrFailed (see Retryable).
//   - Secrets stay secret. The values of Spec.Env never appear in errors or
//     logs.
//   - Safe for concurrent use by many workers.
type Runtime interface {
	// Kind is the template runtime this implements: container.RuntimeDocker
	// or container.RuntimeKubernetes.
	Kind() string

	// Place returns the node for inst: its RuntimeNodeName when set (checked
	// to exist), the node already holding its object, or a node chosen by
	// the template's scheduling rules among those with room. No node
	// matching the rules is ErrInvalid; matching nodes all full or down is
	// ErrUnavailable.
	Place(ctx context.Context, inst container.Instance) (node string, err error)

	// Create makes the container for inst from inst.Spec, without starting
	// it, preparing its image first per the spec's pull policy. It returns
	// the Ref to use for every later call.
	Create(ctx context.Context, inst container.Instance) (Ref, error)

	// Start starts the created or stopped container; a running one is left
	// as it is. A missing object is ErrNotFound.
	Start(ctx context.Context, ref Ref) error

	// Stop asks the container's process to end and kills it when it has not
	// after grace (zero kills at once). A stopped container is left as it
	// is; a missing object is ErrNotFound.
	Stop(ctx context.Context, ref Ref, grace time.Duration) error

	// Delete removes the container whatever its state, with the storage it
	// alone uses. A missing object is success.
	Delete(ctx context.Context, ref Ref) error

	// Inspect reports the container's current state. A missing object is
	// ErrNotFound.
	Inspect(ctx context.Context, ref Ref) (State, error)

	// List reports every container of berth's (labelled LabelManaged) on
	// every node. When a node cannot be listed the result holds the others
	// and the error is ErrUnavailable: callers must not take a container's
	// absence from such a partial list as its removal.
	List(ctx context.Context) ([]State, error)

	// Watch streams lifecycle events of berth's containers on every node
	// from the moment it is called until ctx ends, when the channel is
	// closed. Delivery is at least once: a node whose stream breaks is
	// reconnected and replayed from its last event, so an event may repeat.
	Watch(ctx context.Context) (<-chan Event, error)

	// Ping checks that every node answers; the error names those that do not.
	Ping(ctx context.Context) error
}

// Ref is where an instance's container lives: the node, and the runtime's
// own id of the object (informational: calls address the object by the name
// derived from InstanceID, which survives a lost create response; RuntimeID
// is used only when InstanceID is empty).
type Ref struct {
	InstanceID string `json:"instance_id"`
	Node       string `json:"node,omitempty"`
	RuntimeID  string `json:"runtime_id,omitempty"`
}

// RefOf is the Ref recorded on an instance.
func RefOf(inst container.Instance) Ref {
	return Ref{InstanceID: inst.ID, Node: inst.RuntimeNodeName, RuntimeID: inst.RuntimeID}
}

// ObjectName is the name of an instance's object: the Docker container name
// (a runtime whose names must be lower case, as Kubernetes', lower-cases it).
func ObjectName(instanceID string) string { return "berth-" + instanceID }
