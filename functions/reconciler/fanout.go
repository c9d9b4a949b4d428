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
// queue (fleet.reconcile_shard_queue_url), whose records run shard s's
// pass (handleShard: the instances of its node buckets, the runtimes and
// orphans of its nodes, the fleet-wide steps only when s leads).
func (f *function) shardLoop(cfg *config.Config, q fleetfanout.ShardQueue) *fleetfanout.Loop {
	l := fleetfanout.FromConfig(cfg, "reconcile", q)
	l.Whole = func(ctx context.Context, t fleetfanout.Tick) (any, error) { return f.handleTick(ctx, tick(t)) }
	l.Shard = func(ctx context.Context, s fleetshard.Shard) (any, error) { return f.handleShard(ctx, s) }
	l.Logger = f.log
	return l
}
