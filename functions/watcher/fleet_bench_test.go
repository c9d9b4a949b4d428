package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// The fleet BenchmarkWatcherFleet watches: 1,000 simulated Docker hosts,
// one in a hundred hanging (it accepts connections and never answers), and
// how many shards of DefaultNodesPerShard hosts that makes.
const (
	fleetHosts     = 1000
	fleetHangEvery = 100
	fleetShards    = fleetHosts / fleetshard.DefaultNodesPerShard
)

// exitTap records, for each exit of the instances it is told of, the time
// from the exit (the engine's FinishedAt, Observation.At) until the state
// loop had applied it: exit → recorded.
type exitTap struct {
	loop interface {
		OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error)
	}
	mu      sync.Mutex
	want    map[string]bool
	latency map[string]time.Duration // by instance
	node    map[string]string
	all     chan struct{} // closed once every wanted exit is recorded
}

func (x *exitTap) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	applied, err := x.loop.OnEvent(ctx, ob)
	if err != nil || ob.Kind != manager.ObservedExited {
		return applied, err
	}
	took := time.Since(ob.At)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.want[ob.InstanceID] {
		if _, seen := x.latency[ob.InstanceID]; !seen {
			x.latency[ob.InstanceID], x.node[ob.InstanceID] = took, ob.NodeName
			if len(x.latency) == len(x.want) {
				close(x.all)
			}
		}
	}
	return applied, err
}

// expect starts a round: the instances whose exits count.
func (x *exitTap) expect(ids []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.want, x.latency, x.node, x.all = map[string]bool{}, map[string]time.Duration{}, map[string]string{}, make(chan struct{})
	for _, id := range ids {
		x.want[id] = true
	}
}

// BenchmarkWatcherFleet measures the watcher over 1,000 simulated Docker
// hosts with 1 % of them hanging, on DynamoDB Local: one container exits on
// every healthy host (spread over 5 s) while the watcher runs, and each
// exit's exit → recorded is taken (goal p99 ≤ 5 s). Two rounds in the same
// run: one invocation watching every host (handle, as the unsharded tick
// runs it), and ten invocations at once each watching one shard's hosts
// (fleetshard.All(10), Shard.OwnsNode), as the sharded fan-out runs them;
// per shard, the worst shard's p99 is reported too.
func BenchmarkWatcherFleet(b *testing.B) {
	fleet, err := dockersim.New(dockersim.Options{Hosts: fleetHosts, Images: []string{"sim/app:1"}})
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.Close()
	hanging := map[string]bool{}
	for i := fleetHangEvery / 2; i < fleetHosts; i += fleetHangEvery {
		h := fleet.Hosts()[i]
		if err := h.SetFaults(&dockersim.Faults{Hang: true}); err != nil {
			b.Fatal(err)
		}
		hanging[h.Name()] = true
	}
	st := teststores.Dynamo(b, time.Now)
	cfg := config.Default()
	cfg.Docker.Scope = "bench-" + strings.ToLower(container.NewID())
	cfg.Docker.Hosts = fleet.DockerHosts(config.DockerHost{NetworkMode: "none"})
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	nodes, err := configured.ByNode(cfg, logger, nil)
	if err != nil {
		b.Fatal(err)
	}
	rts, err := configured.Build(cfg, logger, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rts.Close()
	tap := &exitTap{}
	fn := func(nodes []configured.Node) *function {
		f, err := newFunction(cfg, st, nodes, rts.All(), metrics.New(io.Discard, nil), logger)
		if err != nil {
			b.Fatal(err)
		}
		tap.loop = f.loop
		f.loop = tap
		return f
	}
	whole := []*function{fn(nodes)}
	var sharded []*function
	for _, s := range fleetshard.All(fleetShards) {
		var mine []configured.Node
		for _, n := range nodes {
			if s.OwnsNode(n.Kind, n.Name) {
				mine = append(mine, n)
			}
		}
		sharded = append(sharded, fn(mine))
	}
	m := manager.New(manager.Options{Store: st, Logger: logger})
	if _, _, err := m.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true}, container.Template{
		Name: "sim", Runtime: "docker", Image: "sim/app:1", PullPolicy: container.PullNever, Command: []string{"run"},
		UserEnv: []string{dockersim.EnvRunFor}}); err != nil {
		b.Fatal(err)
	}
	var wholeLat, shardLat map[string]time.Duration
	var shardNode map[string]string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wholeLat, _ = watchRound(b, fleet, hanging, m, st, rts.Docker, tap, whole)
		shardLat, shardNode = watchRound(b, fleet, hanging, m, st, rts.Docker, tap, sharded)
	}
	b.StopTimer()
	w, s := durations(wholeLat), durations(shardLat)
	b.ReportMetric(ms(percentile(w, 50)), "whole-p50-ms")
	b.ReportMetric(ms(percentile(w, 99)), "whole-p99-ms")
	b.ReportMetric(ms(percentile(s, 50)), "sharded-p50-ms")
	b.ReportMetric(ms(percentile(s, 99)), "sharded-p99-ms")
	b.ReportMetric(float64(percentile(s, 99))/float64(percentile(w, 99)), "sharded/whole-p99")
	var worst time.Duration
	for _, sh := range fleetshard.All(fleetShards) {
		var mine []time.Duration
		for id, d := range shardLat {
			if sh.OwnsNode(container.RuntimeDocker, shardNode[id]) {
				mine = append(mine, d)
			}
		}
		worst = max(worst, percentile(mine, 99))
	}
	b.ReportMetric(ms(worst), "worst-shard-p99-ms")
	b.ReportMetric(float64(len(w)), "exits/round")
}

// watchRound runs the functions' invocations at once, waits until every
// healthy host's stream is open, makes one running instance per healthy
// host whose container exits 2 to 7 s after it starts, and returns each
// exit's exit → recorded (and node) once all are recorded.
func watchRound(b *testing.B, fleet *dockersim.Fleet, hanging map[string]bool, m *manager.Manager, st store.Store,
	rt runtime.Runtime, tap *exitTap, fns []*function) (map[string]time.Duration, map[string]string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Go(func() {
			if _, err := f.handle(ctx); err != nil && ctx.Err() == nil {
				b.Errorf("handle: %v", err)
			}
		})
	}
	healthy := fleetHosts - len(hanging)
	for fleet.Streams() < healthy {
		if ctx.Err() != nil {
			b.Fatalf("%d streams open, want %d", fleet.Streams(), healthy)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	insts := fleetInstances(b, ctx, fleet, hanging, m, st)
	ids := make([]string, len(insts))
	for i, in := range insts {
		ids[i] = in.ID
	}
	tap.expect(ids)
	b.StartTimer()
	startAll(b, ctx, rt, insts)
	select {
	case <-tap.all:
	case <-ctx.Done():
		tap.mu.Lock()
		b.Fatalf("%d of %d exits recorded", len(tap.latency), len(tap.want))
	}
	cancel()
	wg.Wait()
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return tap.latency, tap.node
}

// fleetInstances makes one running instance per healthy host, placed on it,
// each to run 2 to 7 s (dockersim.EnvRunFor) so that the exits spread.
func fleetInstances(b *testing.B, ctx context.Context, fleet *dockersim.Fleet, hanging map[string]bool, m *manager.Manager, st store.Store) []container.Instance {
	b.Helper()
	var hosts []string
	for _, h := range fleet.Hosts() {
		if !hanging[h.Name()] {
			hosts = append(hosts, h.Name())
		}
	}
	out := make([]container.Instance, len(hosts))
	parallel(b, len(hosts), func(i int) error {
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "sim",
			Env: map[string]string{dockersim.EnvRunFor: (2*time.Second + time.Duration(i%100)*50*time.Millisecond).String()}}, nil, "")
		if err != nil {
			return err
		}
		inst := res.Instance
		for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
			inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
				Update: func(in *container.Instance) { in.RuntimeNodeName = hosts[i] }})
			if err != nil {
				return err
			}
		}
		out[i] = inst
		return nil
	})
	return out
}

// startAll creates and starts each instance's container on its host.
func startAll(b *testing.B, ctx context.Context, rt runtime.Runtime, insts []container.Instance) {
	b.Helper()
	parallel(b, len(insts), func(i int) error {
		ref, err := rt.Create(ctx, insts[i])
		if err == nil {
			err = rt.Start(ctx, ref)
		}
		return err
	})
}

// parallel runs fn(0…n-1) from 16 goroutines, failing at the first error.
func parallel(b *testing.B, n int, fn func(i int) error) {
	b.Helper()
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("item %d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func durations(m map[string]time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	return out
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
