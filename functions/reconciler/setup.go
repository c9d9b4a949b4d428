package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdaenv"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
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
	log *slog.Logger
}

// setup loads the configuration from env and builds the reconciler on
// DynamoDB, the Docker hosts and (when configured) the SQS queues.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	lambdaenv.WarnUnknownEnv(logger, environ)
	awsCfg, err := lambdaenv.AWSConfig(ctx, cfg.Store.Region)
	if err != nil {
		return nil, err
	}
	ddb := lambdaenv.DynamoDB(awsCfg, env)
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: cfg.Store.TablePrefix})
	rt, err := docker.New(cfg.Docker, docker.Options{Scope: cfg.Docker.Scope, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%w (docker.hosts comes from the file named by %s)", err, lambdaenv.ConfigFileVar)
	}
	name, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	emf := metrics.New(os.Stdout, map[string]string{"Function": name})
	var sw reconcile.Sweeper
	if cfg.Queue.CreateQueueURL != "" && cfg.Queue.LifecycleQueueURL != "" {
		sw = newSweeper(cfg, st, sqs.NewFromConfig(awsCfg), emf, logger)
	} else {
		logger.Warn("no queue URLs configured: the outbox sweep is skipped (set BERTH_QUEUE_CREATE_QUEUE_URL and BERTH_QUEUE_LIFECYCLE_QUEUE_URL)")
	}
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, cfg.Docker.Scope, sw, emf, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("reconciler function ready", "table_prefix", cfg.Store.TablePrefix, "region", awsCfg.Region,
		"docker_hosts", rt.Hosts(), "sweep", sw != nil)
	return fn, nil
}

// newSweeper is the outbox dispatcher on the two SQS queues: its Sweep
// re-dispatches stale pending items.
func newSweeper(cfg *config.Config, st store.OutboxStore, sqsClient sqsqueue.API, emf *metrics.Emitter, logger *slog.Logger) *outbox.Dispatcher {
	return &outbox.Dispatcher{
		Queues: map[outbox.QueueName]queue.Queue{
			outbox.CreateQueue:    sqsqueue.New(sqsClient, cfg.Queue.CreateQueueURL),
			outbox.LifecycleQueue: sqsqueue.New(sqsClient, cfg.Queue.LifecycleQueueURL),
		},
		Store: st, Metrics: emf, Logger: logger,
	}
}

// newFunction wires the manager and the reconciler on their parts; tests
// call it with DynamoDB Local and a real Docker engine in a scope of their
// own. sweeper may be nil.
func newFunction(cfg *config.Config, st store.Store, rts []runtime.Runtime, scope string, sweeper reconcile.Sweeper,
	emf *metrics.Emitter, logger *slog.Logger) (*function, error) {
	m := manager.New(manager.Options{Store: st, MaxPending: cfg.Container.CreateQueueMaxPending,
		Runtimes: cfg.Container.AllowedRuntimes, WorkspaceRoot: cfg.Container.WorkspaceRoot, Logger: logger, Metrics: emf})
	rc, err := reconcile.New(reconcile.Options{
		Manager: m, Runtimes: rts, Scope: scope, Sweeper: sweeper,
		OutboxStaleAfter: cfg.Container.OutboxSweepAfter,
		Timeouts:         reconcile.TimeoutsFor(cfg.Container),
		Logger:           logger, Metrics: emf,
	})
	if err != nil {
		return nil, err
	}
	return &function{rc: rc, log: logger}, nil
}

// handle runs one pass for a scheduled event and returns its Report. The
// pass ends deadlineMargin before the invocation's deadline at the latest.
// An error (the store unreachable) fails the invocation, which EventBridge
// retries; the next schedule tick would run a pass anyway.
func (f *function) handle(ctx context.Context, ev events.EventBridgeEvent) (reconcile.Report, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
		defer cancel()
	}
	f.log.InfoContext(ctx, "scheduled reconcile", "event_id", ev.ID, "source", ev.Source, "detail_type", ev.DetailType,
		"scheduled_at", ev.Time, "resources", ev.Resources)
	return f.rc.Run(ctx)
}

// loadConfig is the reconciler's configuration: the DynamoDB store, queues
// only for the sweep (optional), docker.hosts from the file.
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	return lambdaenv.LoadConfig("reconciler", env, false)
}
