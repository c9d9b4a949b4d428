package main

import (
	"context"
	"github.com/berth-io/berth/internal/scheduletick"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/monitor"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
)

// setup loads the configuration from env and builds the watcher on
// DynamoDB, one runtime per node and, for the starts the state loop cannot
// take, the reconciler's converger.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	e, err := wiring.New(ctx, "watcher", false, env, environ, logger)
	if err != nil {
		return nil, err
	}
	nodes, err := configured.ByNode(e.Config, logger, wiring.RuntimesHint)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		logger.Warn("no runtime configured (docker.hosts and kubernetes.clusters are empty): the watcher watches nothing")
	}
	// The converger's runtimes: one per kind, over every node.
	rts, err := configured.Build(e.Config, logger, wiring.RuntimesHint)
	if err != nil {
		return nil, err
	}
	fn, err := newFunction(e.Config, e.Store, nodes, rts.All(), e.Metrics, logger)
	if err != nil {
		return nil, err
	}
	fn.fanout = fn.shardLoop(e.Config, fleetfanout.QueueAt(e.SQS(), e.Config.Fleet.WatchShardQueueURL))
	var names []string
	for _, n := range nodes {
		names = append(names, n.Kind+"/"+n.Name)
	}
	logger.Info("watcher function ready", "table_prefix", e.Config.Store.TablePrefix, "region", e.AWS.Region, "nodes", names,
		"shards", fn.fanout.Count(), "shard_queue", e.Config.Fleet.WatchShardQueueURL)
	return fn, nil
}

// newFunction wires the manager, the converger (on rts, one runtime per
// kind) and the nodes; tests call it with DynamoDB Local and a real Docker
// engine in a scope of their own.
func newFunction(cfg *config.Config, st store.Store, nodes []configured.Node, rts []runtime.Runtime, emf *metrics.Emitter,
	logger *slog.Logger) (*function, error) {
	m := manager.New(wiring.ManagerOptions(cfg, st, logger, emf))
	// As `berth serve`'s state loop: a start the loop cannot take (a failed
	// instance's) is converged at once by the reconciler's own rule.
	rc, err := reconcile.New(wiring.ReconcileOptions(cfg, m, st, rts, nil, logger, emf))
	if err != nil {
		return nil, err
	}
	return &function{nodes: nodes, loop: monitor.Converging(m, rc), expirer: m, store: st, log: logger, metrics: emf}, nil
}

// tick is any event a schedule invokes the function with: the Scheduler's
// input, or an EventBridge rule's scheduled event. Either holds one watch.
type tick struct {
	events.EventBridgeEvent
	scheduletick.Input
}

// handleTick is the Lambda handler: it says which tick it runs for, then
// watches until shortly before the deadline (handle).
func (f *function) handleTick(ctx context.Context, t tick) (Report, error) {
	t.Input.Log(ctx, f.log)
	return f.handle(ctx)
}
