package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
)

// shardPasses builds the reconciler of a shard's invocation: runtimes over
// the shard's nodes only (configured.ForShard), the function's manager,
// store and sweeper, Options.Shard set. It keeps the last shard's, so a
// warm container invoked for the same shard again resumes where a
// truncated pass stopped, as the whole reconciler does.
type shardPasses struct {
	cfg     *config.Config
	m       *manager.Manager
	st      store.Store
	sweeper reconcile.Sweeper
	emf     *metrics.Emitter
	log     *slog.Logger

	shard fleetshard.Shard
	rc    *reconcile.Reconciler
	rts   *configured.Runtimes
}

// of returns shard s's reconciler, building it (and closing the last
// shard's runtimes) when s is not the last one asked for.
func (p *shardPasses) of(s fleetshard.Shard) (*reconcile.Reconciler, error) {
	if p.rc != nil && p.shard == s {
		return p.rc, nil
	}
	if p.rts != nil {
		p.rts.Close()
		p.rc, p.rts = nil, nil
	}
	cfg := configured.ForShard(p.cfg, s)
	rts, err := configured.Build(cfg, p.log, wiring.RuntimesHint)
	if err != nil {
		return nil, fmt.Errorf("runtimes of shard %s: %w", s, err)
	}
	o := wiring.ReconcileOptions(cfg, p.m, p.st, rts.All(), p.sweeper, p.log, p.emf)
	o.Shard = s
	rc, err := reconcile.New(o)
	if err != nil {
		rts.Close()
		return nil, err
	}
	p.shard, p.rc, p.rts = s, rc, rts
	return rc, nil
}

// handleShard runs one pass of shard s (a fan-out message's "shard" of
// "shards"): the active instances of its buckets, the runtimes of its
// nodes, and the fleet-wide steps only when s leads. A whole shard is the
// whole pass (handle's).
func (f *function) handleShard(ctx context.Context, s fleetshard.Shard) (reconcile.Report, error) {
	if err := s.Validate(); err != nil {
		return reconcile.Report{}, err
	}
	if s.IsWhole() {
		return f.run(ctx, f.rc, true)
	}
	rc, err := f.shards.of(s)
	if err != nil {
		return reconcile.Report{}, err
	}
	f.log.InfoContext(ctx, "shard reconcile", "shard", s.String())
	return f.run(ctx, rc, s.Leads())
}
