package main

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-io/berth/internal/expiry"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/monitor"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker"
)

const (
	// deadlineMargin is kept free before the invocation's deadline: the
	// watch ends then, and the Report and metrics are written before
	// Lambda would end the invocation as timed out.
	deadlineMargin = 2 * time.Second
	// noDeadlineWindow is how long an invocation without a deadline (a
	// direct call, not Lambda's) watches.
	noDeadlineWindow = time.Minute
	// pingTimeout bounds the check, at the start of each invocation, that
	// a node answers: a node that does not is reported and watched anyway
	// (its stream is retried with backoff for the whole invocation).
	pingTimeout = 5 * time.Second
)

// Metric names the watcher emits per node and invocation (dimensions Kind
// and Node), in the berth namespace.
const (
	// MetricEvents counts the runtime events the node's watch fed to the
	// state loop.
	MetricEvents = "WatcherEvents"
	// MetricNodeUnavailable is 1 when the node did not answer at the start
	// of the invocation, 0 when it did: alarm on its maximum.
	MetricNodeUnavailable = "WatcherNodeUnavailable"
)

// expiryReload is how often an invocation reads the instances due within
// its span again (store.InstanceStore.ListDeadlines: the sparse deadline
// index, IndexShards queries that read only the instances due): it notes
// no write, so a deadline set less than this before it falls (a create with
// a very short lifetime) is heard of up to this late.
const expiryReload = 2 * time.Second

// function is what a Lambda container keeps between events.
type function struct {
	nodes []configured.Node
	loop  monitor.StateLoop
	// expirer and store carry out the lifetimes that fall within the
	// invocation (internal/expiry, the timers berth serve runs too).
	expirer expiry.Expirer
	store   expiry.Lister
	log     *slog.Logger
	metrics *metrics.Emitter
	// fanout is the Lambda handler: the tick's whole watch or its fan-out
	// to the shard queue, and the shard queue's records (shardLoop).
	fanout *fleetfanout.Loop
	// shard is the part of the fleet the nodes are (forShard); the zero
	// Shard is all of it.
	shard fleetshard.Shard
}

// Report is the invocation's result: the span it watched and, per node,
// what it saw.
type Report struct {
	// Since is where the Docker streams began: one invocation's length
	// before Start, so that a watcher that died is made up for.
	Since time.Time `json:"since"`
	Start time.Time `json:"start"`
	Until time.Time `json:"until"`
	// Shard of Shards is the part of the fleet watched (0 of 1: all of it).
	Shard  int          `json:"shard"`
	Shards int          `json:"shards"`
	Nodes  []NodeReport `json:"nodes"`
}

// NodeReport is one node's part of a Report.
type NodeReport struct {
	Kind string `json:"kind"`
	Node string `json:"node"`
	// Events is how many runtime events were fed to the state loop
	// (replayed ones included; the loop ignores what it already has).
	Events int64 `json:"events"`
	// Transitions is how many of them moved an instance.
	Transitions int64 `json:"transitions"`
	// Unavailable is the node's ping failure at the start, if any.
	Unavailable string `json:"unavailable,omitempty"`
}

// handle watches every node until deadlineMargin before the invocation's
// deadline, each node on its own (monitor.Run on the node's runtime), and
// returns what each saw. It fails only when ctx is already done: a node
// that does not answer is reported in the logs, the metrics and the
// Report, and costs no other node anything.
func (f *function) handle(ctx context.Context) (Report, error) {
	start := time.Now()
	until := start.Add(noDeadlineWindow)
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-deadlineMargin)
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	window := max(until.Sub(start), 0)
	rep := Report{Since: start.Add(-window), Start: start, Until: until, Shard: f.shard.Index, Shards: max(f.shard.Count, 1),
		Nodes: make([]NodeReport, len(f.nodes))}
	wctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	f.log.InfoContext(ctx, "watching", "nodes", len(f.nodes), "since", rep.Since, "until", until)
	// The lifetimes and retentions that fall while this invocation
	// watches: overlapping invocations hold the same timers, and the
	// conditional write makes the second a no-op.
	if f.expirer != nil && f.store != nil { // newFunction sets both; a bare watch holds no timers
		timers := expiry.New(expiry.Options{Expirer: f.expirer, Store: f.store, Window: window, Reload: expiryReload, Logger: f.log}).Service()
		if err := timers.Start(wctx); err != nil {
			return Report{}, err
		}
		defer timers.Stop()
	}
	var wg sync.WaitGroup
	for i, n := range f.nodes {
		wg.Go(func() { rep.Nodes[i] = f.watchNode(wctx, n, rep.Since) })
	}
	wg.Wait()
	for _, nr := range rep.Nodes {
		f.metrics.Count(MetricEvents, float64(nr.Events), "Kind", nr.Kind, "Node", nr.Node)
		down := 0.0
		if nr.Unavailable != "" {
			down = 1
		}
		f.metrics.Count(MetricNodeUnavailable, down, "Kind", nr.Kind, "Node", nr.Node)
	}
	f.log.InfoContext(ctx, "watch ended", "nodes", rep.Nodes, "watched_ms", time.Since(start).Milliseconds())
	return rep, nil
}

// watchNode checks that n answers, then feeds its events from since to
// the state loop until ctx ends.
func (f *function) watchNode(ctx context.Context, n configured.Node, since time.Time) NodeReport {
	nr := NodeReport{Kind: n.Kind, Node: n.Name}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err := n.Runtime.Ping(pctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		nr.Unavailable = err.Error()
		// Watched anyway: a node that comes back within the invocation is
		// heard from then on, and its events since are replayed.
		f.log.WarnContext(ctx, "node unavailable: its events wait for it or the reconciler", "kind", n.Kind, "node", n.Name, "error", err)
	}
	c := &counting{loop: f.loop}
	monitor.Run(ctx, replaying{Runtime: n.Runtime, since: since}, c, f.log.With("kind", n.Kind, "node", n.Name))
	nr.Events, nr.Transitions = c.events.Load(), c.transitions.Load()
	return nr
}

// sinceWatcher is a runtime that can replay the events it still holds from
// a moment in the past (runtime/docker's engines keep their last events).
// WatchSince must keep Watch's contract, with since in the place of "the
// moment it is called".
type sinceWatcher interface {
	WatchSince(ctx context.Context, since time.Time) (<-chan runtime.Event, error)
}

var _ sinceWatcher = (*docker.Runtime)(nil)

// replaying is a runtime whose Watch starts at since when the runtime can
// (sinceWatcher); otherwise its own Watch reports what a new watch learns
// (Kubernetes lists every Pod first, so an exit while nothing watched is
// reported from the Pod's state).
type replaying struct {
	runtime.Runtime
	since time.Time
}

// Watch starts the stream at r.since where the runtime can replay.
func (r replaying) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	if sw, ok := r.Runtime.(sinceWatcher); ok {
		return sw.WatchSince(ctx, r.since)
	}
	return r.Runtime.Watch(ctx)
}

// Logs reads through the runtime's LogReader, so that the exits the loop
// records keep their last words (monitor.Run reads them from the runtime
// it watches: runtime.LastWordsFrom).
func (r replaying) Logs(ctx context.Context, ref runtime.Ref, opts runtime.LogOptions, fn func(runtime.LogLine) error) error {
	lr, ok := r.Runtime.(runtime.LogReader)
	if !ok {
		return runtime.Errorf(runtime.ErrInvalid, "logs", ref.InstanceID, ref.Node, "the %s runtime cannot read logs", r.Kind())
	}
	return lr.Logs(ctx, ref, opts, fn)
}

// counting is the state loop, counting what it is fed.
type counting struct {
	loop                monitor.StateLoop
	events, transitions atomic.Int64
}

var _ monitor.StateLoop = (*counting)(nil)

func (c *counting) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	c.events.Add(1)
	applied, err := c.loop.OnEvent(ctx, ob)
	if applied == manager.AppliedTransition {
		c.transitions.Add(1)
	}
	return applied, err
}
