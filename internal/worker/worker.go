// Package worker carries out the four container operations (create, start,
// stop, delete) and the group cleanup policies for queue messages. Delivery
// is at least once, so every
// step is idempotent: runtime objects are named from the instance id, every
// status change is a conditional write, and a message whose operation no
// longer applies is acknowledged with the reason logged, never acted on.
package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// Manager is how the worker changes instances. Every instance write goes
// through it (manager.Manager implements it) as an intent the manager
// turns into a store write, so there is one writer of state with one
// conflict-retry rule (manager.MaxConflictRetries) and one group policy.
// An intent that no longer applies is manager.ErrMoved; a missing
// instance store.ErrNotFound.
type Manager interface {
	// OnEvent applies what the runtime shows through the state loop.
	OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error)
	// ClaimItem takes up op: its requested status → its in-progress
	// status, marking the outbox item outboxID dispatched in the same
	// write when it is still pending (empty: no item to mark).
	ClaimItem(ctx context.Context, id string, op container.Op, node, outboxID string, at time.Time) (container.Instance, error)
	// Placed records where a create's container is while it is creating.
	Placed(ctx context.Context, id, runtimeID, node string) error
	// Stopped completes a stop (stopping → stopped, item completed).
	Stopped(ctx context.Context, id, outboxID string, finished time.Time, exit *int, words *container.LastWords, at time.Time) error
	// Frozen completes a pause (running → paused) or a resume (paused →
	// running), item completed; ErrMoved when the instance moved on.
	Frozen(ctx context.Context, id, outboxID string, pause bool, at time.Time) error
	// Deleted removes a deleting instance whose container is gone.
	Deleted(ctx context.Context, id, outboxID string, words *container.LastWords, at time.Time) error
	// Fail fails an instance with a reason and its group policy.
	Fail(ctx context.Context, id string, f manager.Failure) (bool, error)
	// ApplyCleanup carries out a group policy item on its member.
	ApplyCleanup(ctx context.Context, c manager.Cleanup, halt manager.Halter) (manager.CleanupStep, fsm.Status, error)
	// ClearStaleMembers asks for the delete of the group members that a
	// create of inst makes stale and returns the ids of those that still
	// exist (none: the create may go on).
	ClearStaleMembers(ctx context.Context, inst container.Instance, requestID string) ([]string, error)
}

var _ Manager = (*manager.Manager)(nil)

// Store is what the worker reads, and the bookkeeping of outbox items,
// which changes no instance.
type Store interface {
	GetInstance(ctx context.Context, id string) (container.Instance, error)
	GetOutbox(ctx context.Context, id string) (container.OutboxItem, error)
	MarkDone(ctx context.Context, id string, at time.Time) error
	MarkAttempt(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error
	MarkFailed(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error
}

var _ Store = (store.Store)(nil)

// Options configure a Worker.
type Options struct {
	// Manager writes instances; Store reads them and keeps the outbox's
	// books. Both are required.
	Manager  Manager
	Store    Store
	Runtimes *runtime.Resolver
	// CreateSlots limits creates in flight in this process
	// (create_queue_max_concurrency). Nil means no local limit: in Lambda
	// the CreateWorker's reserved concurrency is the limit.
	CreateSlots *Slots
	// CreateStartTimeout bounds the wait for a new container to become
	// stable (running or exited). Defaults to
	// config.DefaultCreateStartTimeout.
	CreateStartTimeout time.Duration
	// StopGrace is how long a stop waits before killing. Defaults to
	// config.DefaultStopGracePeriod.
	StopGrace time.Duration
	// MaxAttempts is how many deliveries an operation gets before the
	// instance is failed and the message left to the dead-letter queue
	// (set the queue's maxReceiveCount to the same). Deliveries that found
	// the runtime unavailable do not count. Defaults to
	// config.DefaultMaxAttempts.
	MaxAttempts int
	// UnavailableRetryFor bounds how long an operation waits for a runtime
	// that cannot be reached before its instance is failed. Defaults to
	// config.DefaultUnavailableRetryFor.
	UnavailableRetryFor time.Duration
	// Backoff gives the delay before delivery attempt+1. Defaults to
	// ExponentialBackoff(DefaultBackoffBase, DefaultBackoffMax).
	Backoff func(attempt int) time.Duration
	// StablePoll is the first interval of the stabilisation wait's
	// Inspect polling (backing off to maxStablePoll). Defaults to
	// DefaultStablePoll.
	StablePoll time.Duration
	// Secrets resolves templates' secret_env as containers are made; nil
	// fails the creates that need a secret.
	Secrets SecretSource
	Metrics *metrics.Emitter
	Logger  *slog.Logger
	Clock   func() time.Time
	// Webhooks delivers webhook deliveries (deliver.go); nil fails their
	// attempts.
	Webhooks Deliverer
	// EventBus puts deliveries addressed to container.EventBusTarget on the
	// deployment's event bus (eventbus.Deliverer); nil fails their attempts.
	EventBus Deliverer
	// DeliveryRetryFor bounds how long a delivery is retried. Defaults to
	// DefaultDeliveryRetryFor.
	DeliveryRetryFor time.Duration
	// Filter, when set, sees every decoded message before anything else is
	// done for it (Process's middleware, process.go): the notify function
	// refuses there what is not a delivery.
	Filter Middleware
	// DeliveryBackoff gives the delay before a webhook or event-bus
	// delivery's retry number n (webhooks.retry_backoff and
	// webhooks.retry_backoff_max through wiring). Defaults to Backoff.
	DeliveryBackoff func(retry int) time.Duration
}

// Defaults of Options that are the worker's own.
const (
	// DefaultBackoffBase is the first retry's delay; it doubles per attempt.
	DefaultBackoffBase = 2 * time.Second
	// DefaultBackoffMax caps the retry delay.
	DefaultBackoffMax = 5 * time.Minute
	// DefaultStablePoll is the stabilisation wait's first poll interval.
	DefaultStablePoll = 100 * time.Millisecond
	// maxStablePoll is where that interval stops growing.
	maxStablePoll = 2 * time.Second
)

// Worker handles queue deliveries. It is safe for concurrent use.
type Worker struct {
	m           Manager
	store       Store
	rt          *runtime.Resolver
	slots       *Slots
	timeout     time.Duration
	grace       time.Duration
	maxAttempts int
	unavailFor  time.Duration
	backoff     func(int) time.Duration
	poll        time.Duration
	metrics     *metrics.Emitter
	log         *slog.Logger
	now         func() time.Time
	secrets     SecretSource
	deliverer   Deliverer
	eventBus    Deliverer
	deliverFor  time.Duration
	// deliveryBackoff is Options.DeliveryBackoff.
	deliveryBackoff func(int) time.Duration
	// handler is Process's middleware around the operations (pipeline).
	handler Handler
}

// New returns a Worker. It panics without a Manager or a Store: a worker
// without them is a wiring mistake, not a condition to handle.
func New(o Options) *Worker {
	if o.Manager == nil || o.Store == nil {
		panic("worker.New: Options.Manager and Options.Store are required")
	}
	w := &Worker{
		m: o.Manager, store: o.Store, rt: o.Runtimes, slots: o.CreateSlots,
		timeout: o.CreateStartTimeout, grace: o.StopGrace, maxAttempts: o.MaxAttempts,
		unavailFor: o.UnavailableRetryFor, backoff: o.Backoff, poll: o.StablePoll, metrics: o.Metrics, log: o.Logger, now: o.Clock,
		secrets: o.Secrets, deliverer: o.Webhooks, eventBus: o.EventBus, deliverFor: o.DeliveryRetryFor,
		deliveryBackoff: o.DeliveryBackoff,
	}
	if w.deliverFor <= 0 {
		w.deliverFor = DefaultDeliveryRetryFor
	}
	if w.timeout <= 0 {
		w.timeout = config.DefaultCreateStartTimeout
	}
	if w.grace <= 0 {
		w.grace = config.DefaultStopGracePeriod
	}
	if w.maxAttempts <= 0 {
		w.maxAttempts = config.DefaultMaxAttempts
	}
	if w.unavailFor <= 0 {
		w.unavailFor = config.DefaultUnavailableRetryFor
	}
	if w.backoff == nil {
		w.backoff = ExponentialBackoff(DefaultBackoffBase, DefaultBackoffMax)
	}
	if w.deliveryBackoff == nil {
		w.deliveryBackoff = w.backoff
	}
	if w.poll <= 0 {
		w.poll = DefaultStablePoll
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.handler = w.pipeline(o.Filter)
	return w
}
