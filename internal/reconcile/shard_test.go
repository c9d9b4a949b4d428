package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// fleet is a rig over the two real engines, as two hosts whose names
// put them in different shards under 2 and under 3 shards, the first
// changing shard between the two counts (shardHosts).
type fleet struct {
	*rig
	cfg   *config.Config
	hosts [2]string
}

// shardHosts returns two host names in different shards of 2 and of 3,
// the first of which is not at the same shard index in both.
func shardHosts() [2]string {
	idx := func(n int, h string) int {
		for _, s := range fleetshard.All(n) {
			if s.OwnsNode(container.RuntimeDocker, h) {
				return s.Index
			}
		}
		panic("no shard owns " + h)
	}
	for i := 0; ; i++ {
		a := fmt.Sprintf("host-%d", i)
		for j := i + 1; j < i+50; j++ {
			b := fmt.Sprintf("host-%d", j)
			if idx(2, a) != idx(2, b) && idx(3, a) != idx(3, b) && idx(2, a) != idx(3, a) {
				return [2]string{a, b}
			}
		}
	}
}

func newFleet(t *testing.T, s store.Store) *fleet {
	t.Helper()
	image := testenv.TestImage(t)
	scope := "rs-" + strings.ToLower(container.NewID())
	cfg := config.Default()
	cfg.Docker.Scope = scope
	names := shardHosts()
	cfg.Docker.Hosts = []config.DockerHost{
		{Name: names[0], Endpoint: testenv.DockerHost(t), NetworkMode: "none"},
		{Name: names[1], Endpoint: testenv.DockerHost2(t), NetworkMode: "none"},
	}
	f := &fleet{cfg: cfg, hosts: names}
	rt := f.runtime(t, cfg)
	ctx := testenv.Context(t, 10*time.Second)
	for _, h := range names {
		if _, err := rt.Client(h).Ping(ctx, pingOpts); err != nil {
			testenv.Missing(t, "two Docker engines", err.Error())
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, _ := rt.List(ctx)
		for _, st := range states {
			if err := rt.Delete(ctx, st.Ref); err != nil {
				t.Errorf("cleanup: delete %s: %v", st.Name, err)
			}
		}
	})
	f.rig = rigOn(t, s, rt, scope, image)
	return f
}

// runtime is a Docker runtime over cfg's hosts, in the fleet's scope.
func (f *fleet) runtime(t *testing.T, cfg *config.Config) *docker.Runtime {
	t.Helper()
	rt, err := docker.New(cfg.Docker, docker.Options{Scope: cfg.Docker.Scope, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// shard is a reconciler of shard s, as its invocation builds it: runtimes
// over configured.ForShard's hosts, reading the store through st. It
// returns the hosts it lists too.
func (f *fleet) shard(t *testing.T, s fleetshard.Shard, st reconcile.Store, m reconcile.Manager) (*reconcile.Reconciler, []string) {
	t.Helper()
	one := configured.ForShard(f.cfg, s)
	var rts []runtime.Runtime
	var hosts []string
	if len(one.Docker.Hosts) > 0 {
		rt := f.runtime(t, one)
		rts, hosts = []runtime.Runtime{rt}, rt.Hosts()
	}
	return f.reconciler(func(o *reconcile.Options) {
		o.Shard, o.Runtimes, o.Store = s, rts, st
		if m != nil {
			o.Manager = m
		}
	}), hosts
}

// visitStore counts, per instance, the shard passes that examined it.
type visitStore struct {
	store.Store
	mu     sync.Mutex
	visits map[string]int
}

func (v *visitStore) ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (store.Page[container.Instance], error) {
	page, err := v.Store.ListActiveInBucket(ctx, bucket, cursor, limit)
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, in := range page.Items {
		v.visits[in.ID]++
	}
	return page, err
}

// TestShardsCoverEachInstanceAndHostOncePerCount: a period's passes of
// All(2), then (the count changed) of All(3), over the same fleet of two
// hosts, placed instances on each and an unplaced one: under each count
// every active instance is examined by exactly one shard and every host
// listed by exactly one, the first host moving to another shard between
// the two; what the runtimes show is acted on exactly once (four starts,
// then four containers found removed), and only the leading shard runs
// the fleet-wide steps (the admission repair).
func TestShardsCoverEachInstanceAndHostOncePerCount(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newFleet(t, b.Open(t, time.Now))
		var placed []container.Instance
		for _, h := range f.hosts {
			for range 2 {
				placed = append(placed, f.creating(f.create("sleeper"), h))
			}
		}
		refs := startAll(t, f.rig, placed)
		pending := f.create("sleeper")
		want := append(ids(placed), pending.ID)
		slices.Sort(want)

		ownerOf := map[int]map[string]int{} // count → host → shard index
		period := func(n int) reconcile.Report {
			t.Helper()
			vs := &visitStore{Store: f.store, visits: map[string]int{}}
			listed := map[string]int{}
			ownerOf[n] = map[string]int{}
			var sum reconcile.Report
			for _, s := range fleetshard.All(n) {
				rc, hosts := f.shard(t, s, vs, nil)
				for _, h := range hosts {
					listed[h]++
					ownerOf[n][h] = s.Index
				}
				rep := f.run(rc)
				if rep.Shard != s.Index || rep.Shards != n {
					t.Fatalf("report of shard %v says %d/%d", s, rep.Shard, rep.Shards)
				}
				// The pending instance holds a slot whenever the repair runs.
				if leads := s.Leads(); (rep.AdmissionAfter > 0) != leads {
					t.Fatalf("shard %v (leads %v): admission %d → %d; want the repair on the leader only", s, leads, rep.AdmissionBefore, rep.AdmissionAfter)
				}
				sum.Instances += rep.Instances
				sum.Started += rep.Started
				sum.Destroyed += rep.Destroyed
			}
			if got := slices.Sorted(maps.Keys(vs.visits)); !slices.Equal(got, want) {
				t.Fatalf("%d shards examined %v, want %v", n, got, want)
			}
			for id, k := range vs.visits {
				if k != 1 {
					t.Fatalf("%d shards: instance %s examined %d times", n, id, k)
				}
			}
			for _, h := range f.hosts {
				if listed[h] != 1 {
					t.Fatalf("%d shards: host %s listed %d times", n, h, listed[h])
				}
			}
			return sum
		}
		if rep := period(2); rep.Instances != len(want) || rep.Started != len(placed) {
			t.Fatalf("2 shards: %d instances, %d started; want %d, %d", rep.Instances, rep.Started, len(want), len(placed))
		}
		for _, in := range placed {
			wantStatus(t, f.get(in.ID), fsm.Running)
		}
		removeAll(t, f.rig, refs)
		f.advance(2 * reconcile.DefaultAbsentGrace)
		if rep := period(3); rep.Instances != len(want) || rep.Destroyed != len(placed) {
			t.Fatalf("3 shards: %d instances, %d destroyed; want %d, %d", rep.Instances, rep.Destroyed, len(want), len(placed))
		}
		if ownerOf[2][f.hosts[0]] == ownerOf[3][f.hosts[0]] {
			t.Fatalf("host %s did not move between shards: %v", f.hosts[0], ownerOf)
		}
		for _, in := range placed {
			wantStatus(t, f.get(in.ID), fsm.Failed)
		}
		wantStatus(t, f.get(pending.ID), fsm.Pending)
		noRejections(t, f.rig, want...)
	})
}

// cancelAfter is the manager of a pass killed mid-way: the context is
// cancelled once n observations have moved an instance, as if the
// invocation ended there.
type cancelAfter struct {
	*manager.Manager
	n      int64
	moved  atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	a, err := c.Manager.OnEvent(ctx, ob)
	if a == manager.AppliedTransition && c.moved.Add(1) == c.n {
		c.cancel()
	}
	return a, err
}

// TestShardPassKilledMidwayIsRepairedByTheNext: a shard's pass killed after
// two of its four instances (its invocation ended) leaves the other two
// undone; the next pass of that shard, by a new reconciler (a new
// invocation, nothing carried over), does exactly those.
func TestShardPassKilledMidwayIsRepairedByTheNext(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newFleet(t, b.Open(t, time.Now))
		var shard fleetshard.Shard
		for _, s := range fleetshard.All(2) {
			if s.OwnsNode(container.RuntimeDocker, f.hosts[0]) {
				shard = s
			}
		}
		insts := make([]container.Instance, 4)
		for i := range insts {
			insts[i] = f.creating(f.create("sleeper"), f.hosts[0])
		}
		startAll(t, f.rig, insts)
		running := func() int {
			n := 0
			for _, in := range insts {
				if f.get(in.ID).Status == fsm.Running {
					n++
				}
			}
			return n
		}

		ctx, cancel := context.WithCancel(testenv.Context(t, 2*time.Minute))
		defer cancel()
		killed, _ := f.shard(t, shard, f.store, &cancelAfter{Manager: f.m, n: 2, cancel: cancel})
		if _, err := killed.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("killed pass: %v, want context.Canceled", err)
		}
		if n := running(); n != 2 {
			t.Fatalf("after the killed pass %d of 4 run, want 2", n)
		}
		next, _ := f.shard(t, shard, f.store, nil)
		if rep := f.run(next); rep.Started != 2 || rep.Instances != 4 {
			t.Fatalf("next pass of shard %v: %+v; want the 2 left started, of 4", shard, rep)
		}
		if n := running(); n != 4 {
			t.Fatalf("after the next pass %d of 4 run", n)
		}
		noRejections(t, f.rig, ids(insts)...)
	})
}

func ids(insts []container.Instance) []string {
	out := make([]string, len(insts))
	for i, in := range insts {
		out[i] = in.ID
	}
	return out
}
