package main

import (
	"context"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetshard"
)

// shardLoop is the function's handler (internal/fleetfanout): a tick runs
// the whole pass (handleTick) while the fleet is one shard or q is nil,
// and otherwise sends one message per shard to q, the reconciler's shard
// queue (fleet.reconcile_shard_queue_url), whose records run runShard.
func (f *function) shardLoop(cfg *config.Config, q fleetfanout.ShardQueue) *fleetfanout.Loop {
	return &fleetfanout.Loop{
		Name: "reconcile", Shards: cfg.Fleet.Shards, Nodes: fleetfanout.Nodes(cfg), Period: cfg.Fleet.Period, Queue: q,
		Whole: func(ctx context.Context, t fleetfanout.Tick) (any, error) { return f.handleTick(ctx, tick(t)) },
		Shard: f.runShard, Logger: f.log,
	}
}

// runShard runs shard s's pass (handleShard: the instances of its node
// buckets, the runtimes and orphans of its nodes, the fleet-wide steps
// only when s leads) and returns its Report.
func (f *function) runShard(ctx context.Context, s fleetshard.Shard) (any, error) {
	return f.handleShard(ctx, s)
}
