package main

import (
	"context"
	"github.com/berth-io/berth/internal/scheduletick"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/imagestatus"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
)

// deadlineMargin is kept free before the invocation's deadline so that a
// pass cut short still returns its Report (Truncated) instead of being
// killed with the function.
const deadlineMargin = 3 * time.Second

// function is what a Lambda container keeps between events. Its reconciler
// also keeps where a truncated pass stopped, so the next warm invocation
// resumes there.
type function struct {
	rc  *reconcile.Reconciler
	m   *manager.Manager
	log *slog.Logger
	// refreshImages, when set, stores every template's image status; it
	// runs before the first pass that follows a cold start (a deploy, a
	// scale-out) until it succeeds once.
	refreshImages func(context.Context) error
	imagesDone    bool
	// fanout is the Lambda handler: the tick's whole pass or its fan-out to
	// the shard queue, and the shard queue's records (shardLoop).
	fanout *fleetfanout.Loop
	// takeover records this deployment's generation and, when
	// recover_running_dag_on_start is false, interrupts the groups the last
	// deployment left running; it runs before the first pass of each
	// container until it succeeds once.
	takeover *reconcile.Takeover
	tookOver bool
	// shards builds the reconciler of a shard's invocation (handleShard).
	shards *shardPasses
}

// imageRefresher is refresh_image_status_on_start for the function: nil
// when the key is false.
func imageRefresher(cfg *config.Config, st store.TemplateStore, check imagestatus.Checker, logger *slog.Logger) func(context.Context) error {
	if !cfg.Container.RefreshImageStatusOnStart {
		return nil
	}
	return func(ctx context.Context) error {
		found, err := imagestatus.Refresh(ctx, st, check, time.Now())
		logger.InfoContext(ctx, "image status refreshed", "statuses", len(found), "error", err)
		return err
	}
}

// setup loads the configuration from env and builds the reconciler on
// DynamoDB, the Docker hosts and (when configured) the SQS queues.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	e, err := wiring.New(ctx, "reconciler", false, env, environ, logger)
	if err != nil {
		return nil, err
	}
	cfg := e.Config
	rts, err := configured.Build(cfg, logger, wiring.RuntimesHint)
	if err != nil {
		return nil, err
	}
	if len(rts.All()) == 0 {
		logger.Warn("no runtime configured (docker.hosts and kubernetes.clusters are empty): the pass checks no container")
	}
	var sw reconcile.Sweeper
	if wiring.HasQueues(cfg) {
		sw = &outbox.Dispatcher{Queues: wiring.Queues(cfg, e.SQS()), Store: e.Store, Metrics: e.Metrics, Logger: logger}
	} else {
		logger.Warn("no queue URLs configured: the outbox sweep is skipped (set BERTH_QUEUE_CREATE_QUEUE_URL and BERTH_QUEUE_LIFECYCLE_QUEUE_URL)")
	}
	fn, err := newFunction(cfg, e.Store, rts.All(), sw, e.Metrics, logger)
	if err != nil {
		return nil, err
	}
	fn.fanout = fn.shardLoop(cfg, fleetfanout.QueueAt(e.SQS(), cfg.Fleet.ReconcileShardQueueURL))
	if fn.takeover, err = wiring.Takeover(cfg, e.Store, fn.m, environ, logger); err != nil {
		return nil, err
	}
	var hosts, clusters []string
	if rts.Docker != nil {
		fn.refreshImages = imageRefresher(cfg, e.Store, rts.Docker, logger)
		hosts = rts.Docker.Hosts()
	}
	if rts.Kubernetes != nil {
		clusters = rts.Kubernetes.Clusters()
	}
	logger.Info("reconciler function ready", "table_prefix", cfg.Store.TablePrefix, "region", e.AWS.Region,
		"docker_hosts", hosts, "kubernetes_clusters", clusters, "sweep", sw != nil,
		"shards", fn.fanout.Count(), "shard_queue", cfg.Fleet.ReconcileShardQueueURL)
	return fn, nil
}

// newFunction wires the manager and the reconciler on their parts; tests
// call it with DynamoDB Local and a real Docker engine in a scope of their
// own (cfg.Docker.Scope). sweeper may be nil.
func newFunction(cfg *config.Config, st store.Store, rts []runtime.Runtime, sweeper reconcile.Sweeper,
	emf *metrics.Emitter, logger *slog.Logger) (*function, error) {
	m := manager.New(wiring.ManagerOptions(cfg, st, logger, emf))
	rc, err := reconcile.New(wiring.ReconcileOptions(cfg, m, st, rts, sweeper, logger, emf))
	if err != nil {
		return nil, err
	}
	return &function{rc: rc, m: m, log: logger, shards: &shardPasses{cfg: cfg, m: m, st: st, sweeper: sweeper, emf: emf, log: logger}}, nil
}

// tick is any event a schedule invokes the function with: the Scheduler's
// input, or an EventBridge rule's scheduled event
// (events/reconciler-scheduled.json). Either runs one pass.
type tick struct {
	events.EventBridgeEvent
	scheduletick.Input
}

// handleTick is the Lambda handler: it says which tick it runs for, then
// runs the pass (handle).
func (f *function) handleTick(ctx context.Context, t tick) (reconcile.Report, error) {
	t.Input.Log(ctx, f.log)
	return f.handle(ctx, t.EventBridgeEvent)
}

// handle runs one pass for a scheduled event and returns its Report. The
// pass ends deadlineMargin before the invocation's deadline at the latest.
// An error (the store unreachable) fails the invocation, which EventBridge
// retries; the next schedule tick would run a pass anyway.
func (f *function) handle(ctx context.Context, ev events.EventBridgeEvent) (reconcile.Report, error) {
	f.log.InfoContext(ctx, "scheduled reconcile", "event_id", ev.ID, "source", ev.Source, "detail_type", ev.DetailType,
		"scheduled_at", ev.Time, "resources", ev.Resources)
	return f.run(ctx, f.rc, true)
}

// run makes rc's pass, ending deadlineMargin before the invocation's
// deadline at the latest. A pass that leads (the whole fleet's, or the
// leading shard's) first does the fleet-wide steps of a cold start: the
// takeover and the image status refresh.
func (f *function) run(ctx context.Context, rc *reconcile.Reconciler, leads bool) (reconcile.Report, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
		defer cancel()
	}
	if !leads {
		return rc.Run(ctx)
	}
	if f.takeover != nil && !f.tookOver {
		// Before the pass: a member the last deployment left mid-operation
		// is failed, not re-enqueued by the stuck policy.
		if _, err := f.takeover.Run(ctx); err != nil {
			return reconcile.Report{}, err
		}
		f.tookOver = true
	}
	if f.refreshImages != nil && !f.imagesDone {
		// Lambda runs one event at a time per container: no lock needed.
		// A failed refresh is tried again at the next pass; the pass goes on.
		f.imagesDone = f.refreshImages(ctx) == nil
	}
	return rc.Run(ctx)
}

// loadConfig is the reconciler's configuration: the DynamoDB store, queues
// only for the sweep (optional), docker.hosts from the file.
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	return wiring.LoadConfig("reconciler", env, false)
}
