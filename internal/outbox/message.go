// Package outbox turns outbox items (written in the same transaction as the
// instance change that asked for them) into queue messages, and sweeps items
// that were never dispatched. Creates go to the create queue, start, stop
// and delete to the lifecycle queue.
//
// On AWS the dispatcher Lambda hands a Dispatcher the items DynamoDB Streams
// reports; the local server has no stream, and a Watcher plays its part:
// told of each commit, it dispatches at once, and sweeps on a timer as a
// safety net.
package outbox

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/queue"
)

// Message is the body of a queue message: everything a worker needs to find
// the work and to tell whether it still applies.
type Message struct {
	OutboxID   string `json:"outbox_id"`
	InstanceID string `json:"instance_id"`
	// Owner is the instance's owner (AttrOwner on the queue message).
	Owner           string       `json:"owner,omitempty"`
	Op              container.Op `json:"op"`
	InstanceVersion int64        `json:"instance_version"`
	RequestID       string       `json:"request_id,omitempty"`
	TraceContext    string       `json:"trace_context,omitempty"`
	// CommittedAt is when the outbox item was written; the worker measures
	// dispatch latency from it.
	CommittedAt time.Time `json:"committed_at"`
	// Unavailable is set on a message the worker sent again because the
	// runtime could not be reached; nil on the dispatcher's messages.
	Unavailable *Unavailable `json:"unavailable,omitempty"`
	// Deferrals counts the times a delivery was put off because its
	// subscription's owner had its share of deliveries in flight (the
	// worker's defer.go): no attempt, no retry spent.
	Deferrals int `json:"deferrals,omitempty"`
}

// Unavailable is what a message re-sent during a runtime outage carries, so
// the wait is bounded from its start and the attempts spent before it are
// not forgotten. The worker re-sends instead of letting the queue redeliver
// because a queue counts every delivery toward its dead-letter limit
// (SQS maxReceiveCount), and an outage must not spend attempts.
type Unavailable struct {
	// Since is when the runtime was first found unavailable for this
	// operation.
	Since time.Time `json:"since"`
	// Retries counts the re-sends so far (it drives the backoff).
	Retries int `json:"retries"`
	// PriorAttempts is how many attempts earlier messages of this
	// operation had spent on real failures.
	PriorAttempts int `json:"prior_attempts,omitempty"`
}

// PriorAttempts is how many attempts were spent before this message.
func (m Message) PriorAttempts() int {
	if m.Unavailable == nil {
		return 0
	}
	return m.Unavailable.PriorAttempts
}

// Outgoing is the queue message carrying m, with the attributes every
// berth message has, visible after delay.
func (m Message) Outgoing(id string, delay time.Duration) (queue.Outgoing, error) {
	body, err := m.Encode()
	if err != nil {
		return queue.Outgoing{}, fmt.Errorf("outbox item %s: encode message: %w", m.OutboxID, err)
	}
	return queue.Outgoing{
		ID: id, Body: body, Delay: delay,
		Attributes: map[string]string{
			AttrOp: string(m.Op), AttrInstanceID: m.InstanceID, AttrRequestID: m.RequestID, AttrOutboxID: m.OutboxID,
			AttrOwner: m.Owner,
		},
	}, nil
}

// FromItem builds the message for an outbox item.
func FromItem(it container.OutboxItem) Message {
	return Message{
		OutboxID: it.ID, InstanceID: it.InstanceID, Owner: it.Owner, Op: it.Op, InstanceVersion: it.InstanceVersion,
		RequestID: it.RequestID, TraceContext: it.TraceContext, CommittedAt: it.CreatedAt,
	}
}

// Encode returns the message's JSON body.
func (m Message) Encode() ([]byte, error) { return json.Marshal(m) }

// Decode parses and validates a message body. A body that fails here can
// never be processed: callers acknowledge it (after logging) rather than
// retrying it forever.
func Decode(body []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("outbox message: %w", err)
	}
	switch {
	case m.OutboxID == "":
		return m, fmt.Errorf("outbox message: no outbox_id")
	case m.InstanceID == "":
		return m, fmt.Errorf("outbox message %s: no instance_id", m.OutboxID)
	case !m.Op.Valid():
		return m, fmt.Errorf("outbox message %s: unknown op %q", m.OutboxID, m.Op)
	}
	return m, nil
}

// QueueFor names the queue an operation goes to: creates are limited by
// the create workers' concurrency, lifecycle operations never wait behind them.
func QueueFor(op container.Op) QueueName {
	switch op {
	case container.OpCreate:
		return CreateQueue
	case container.OpDeliver:
		return NotifyQueue
	}
	return LifecycleQueue
}

// QueueName is one of berth's work queues.
type QueueName string

// The queues. NotifyQueue carries webhook deliveries, so that slow
// receivers never hold up a container's stop; a dispatcher without one
// (a stack that has none) sends them to LifecycleQueue.
const (
	CreateQueue    QueueName = "create"
	LifecycleQueue QueueName = "lifecycle"
	NotifyQueue    QueueName = "notify"
)
