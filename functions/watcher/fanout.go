package main

import (
	"context"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetshard"
)

// shardLoop is the function's handler (internal/fleetfanout): a tick holds
// the whole watch (handleTick) while the fleet is one shard or q is nil,
// and otherwise sends one message per shard to q, the watcher's shard
// queue (fleet.watch_shard_queue_url), whose records hold shard s's watch
// (handleShard: its nodes only, the lifetimes' timers only when s leads)
// until shortly before the deadline.
func (f *function) shardLoop(cfg *config.Config, q fleetfanout.ShardQueue) *fleetfanout.Loop {
	l := fleetfanout.FromConfig(cfg, "watch", q)
	l.Whole = func(ctx context.Context, t fleetfanout.Tick) (any, error) { return f.handleTick(ctx, tick(t)) }
	l.Shard = func(ctx context.Context, s fleetshard.Shard) (any, error) { return f.handleShard(ctx, s) }
	l.Logger = f.log
	return l
}
