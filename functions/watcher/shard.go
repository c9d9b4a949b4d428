package main

import (
	"context"

	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/runtime/configured"
)

// shardNodes keeps the nodes shard s owns (fleetshard Shard.OwnsNode, as
// configured.ForShard filters the configuration).
func shardNodes(nodes []configured.Node, s fleetshard.Shard) []configured.Node {
	var out []configured.Node
	for _, n := range nodes {
		if s.OwnsNode(n.Kind, n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// forShard is f as shard s's invocation runs it: watching only the nodes s
// owns, and holding the lifetimes' timers only when s leads (a deadline is
// no node's, so one shard holds every timer and each fires once). A whole
// shard is f itself.
func (f *function) forShard(s fleetshard.Shard) *function {
	if s.IsWhole() {
		return f
	}
	g := *f
	g.nodes, g.shard = shardNodes(f.nodes, s), s
	if !s.Leads() {
		g.expirer, g.store = nil, nil
	}
	return &g
}

// handleShard watches shard s's nodes (a fan-out message's "shard" of
// "shards") as handle watches the whole fleet's, until shortly before the
// invocation's deadline.
func (f *function) handleShard(ctx context.Context, s fleetshard.Shard) (Report, error) {
	if err := s.Validate(); err != nil {
		return Report{}, err
	}
	return f.forShard(s).handle(ctx)
}
