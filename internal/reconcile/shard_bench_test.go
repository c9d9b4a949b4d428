package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
)

// The fleets of BenchmarkReconcileShards (issue #43): 1,000 simulated
// hosts holding 100 running containers each, on bolt and on DynamoDB
// Local, in 10 shards of ≈ 100 hosts (fleetshard.Count's default for 1,000
// nodes). BERTH_BENCH_SHARD_FLEET and BERTH_BENCH_SHARD_FLEET_DYNAMODB
// ("HOSTSxPER_HOST", e.g. "100x10") change them.
const (
	shardFleetBolt     = "1000x100"
	shardFleetDynamoDB = "1000x100"
)

// BenchmarkReconcileShards makes steady-state reconcile passes over the
// running instances of a fleet of simulated Docker hosts
// (internal/runtime/docker/dockersim: each host its own Engine API
// listener, listed by the real docker runtime), on bolt and on DynamoDB
// Local, in the same run: the whole pass (one reconciler over every host,
// MaxInstances covering all) as the baseline, then the 10 shards' passes
// (Options.Shard, runtimes over configured.ForShard's hosts, as a shard's
// invocation builds them) one after another and all at once (as Lambda
// runs the fan-out). The instances match what the hosts list, so no pass
// may act. On bolt they are written through the store's create and
// transitions (seedOne); on DynamoDB Local, whose transactions slow down
// as the table grows (≈ 70 seeds a second at 600 instances, 40 at 4,000:
// hours at 100,000), the same running instances are bulk-loaded by
// dynamostore's ImportInstances (BatchWriteItem), as uncounted instances
// (no quota, usage or admission items, none of which a pass reads). Any
// error, action, truncation or partial listing fails the run. One untimed
// pass of each reconciler first opens its connections.
//
// Reported: ms per whole pass; per shard the slowest and mean ms and their
// sum (sequential), and the wall time of all shards at once (concurrent);
// per round of all shards the store reads (ListActiveInBucket pages and
// items, point reads) and, on DynamoDB, the requests and the read units
// (ReturnConsumedCapacity, each Query at least 0.5), beside the whole
// pass's. Goal: ≤ 60 s (one period) per shard and in total.
func BenchmarkReconcileShards(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		cfg, placed := simFleet(b, func() (int, int) { return fleetSize(b, "BERTH_BENCH_SHARD_FLEET", shardFleetBolt) })
		// NoSync: the seeding is a bulk load; the passes only read.
		st, err := boltstore.Open(filepath.Join(b.TempDir(), "berth.db"), boltstore.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		runShards(b, cfg, st, nil, placed, func(placed []placedInstance) {
			parallelDo(b, len(placed), func(i int) error { return seedOne(context.Background(), st, placed[i].id, placed[i].host) })
		})
	})
	b.Run("dynamodb", func(b *testing.B) {
		cfg, placed := simFleet(b, func() (int, int) { return fleetSize(b, "BERTH_BENCH_SHARD_FLEET_DYNAMODB", shardFleetDynamoDB) })
		meter := &readMeter{}
		base := teststores.DynamoClient(b)
		// More attempts than the tests' client: at 100,000 items DynamoDB Local
		// now and then drops a connection mid-answer under the passes' load
		// ("deserialization failed … use of closed network connection"),
		// which the SDK retries; a run must not end on one.
		client := dynamodb.New(base.Options(), func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, meter.install)
			o.RetryMaxAttempts = 10
		})
		prefix := fmt.Sprintf("rshard%d-", time.Now().UnixNano()%1e9)
		ctx := context.Background()
		if err := dynamostore.EnsureTables(ctx, client, prefix, dynamostore.WithoutTTL()); err != nil {
			b.Fatalf("creating tables on DynamoDB Local: %v", err)
		}
		b.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
		st := dynamostore.New(client, dynamostore.Options{TablePrefix: prefix})
		runShards(b, cfg, st, meter, placed, func(placed []placedInstance) {
			now := time.Now().UTC()
			ins := make([]container.Instance, len(placed))
			for i, p := range placed {
				ins[i] = seededInstance(p.id, p.host, now)
			}
			if err := st.ImportInstances(ctx, ins, dynamostore.ImportOptions{}); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// fleetSize is the hosts and containers per host the variable env names,
// else def.
func fleetSize(b *testing.B, env, def string) (hosts, perHost int) {
	v := os.Getenv(env)
	if v == "" {
		v = def
	}
	if _, err := fmt.Sscanf(v, "%dx%d", &hosts, &perHost); err != nil || hosts < 1 || perHost < 1 {
		b.Fatalf("%s=%q: want HOSTSxPER_HOST", env, v)
	}
	return hosts, perHost
}

// simFleet starts a simulated fleet of hosts, each running perHost
// containers, and returns the configuration naming its hosts.
func simFleet(b *testing.B, size func() (int, int)) (*config.Config, []placedInstance) {
	hosts, perHost := size()
	fleet, err := dockersim.New(dockersim.Options{Hosts: hosts, Images: []string{"sim/app:1"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fleet.Close() })
	cfg := config.Default()
	cfg.Docker.Scope = "rshard-" + strings.ToLower(container.NewID())
	cfg.Docker.Hosts = fleet.DockerHosts(config.DockerHost{NetworkMode: "none"})
	return cfg, simContainers(b, cfg, perHost)
}

// placedInstance is a running container's instance id and host.
type placedInstance struct{ id, host string }

// simContainers creates and starts perHost containers on every host of
// cfg through the docker runtime, as the create worker would, and returns
// their instances' ids and hosts.
func simContainers(b *testing.B, cfg *config.Config, perHost int) []placedInstance {
	rts, err := configured.Build(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rts.Close()
	var out []placedInstance
	for _, h := range cfg.Docker.Hosts {
		for range perHost {
			out = append(out, placedInstance{id: container.NewID(), host: h.Name})
		}
	}
	start := time.Now()
	ctx := context.Background()
	parallelDo(b, len(out), func(i int) error {
		inst := container.Instance{ID: out[i].id, Runtime: container.RuntimeDocker, RuntimeNodeName: out[i].host,
			Spec: container.Spec{Runtime: container.RuntimeDocker, Image: "sim/app:1", PullPolicy: container.PullNever, Command: []string{"run"}}}
		ref, err := rts.Docker.Create(ctx, inst)
		if err == nil {
			err = rts.Docker.Start(ctx, ref)
		}
		return err
	})
	b.Logf("%d simulated containers on %d hosts started in %s", len(out), len(cfg.Docker.Hosts), time.Since(start).Round(time.Second))
	return out
}

// parallelDo runs fn(0…n-1) from 32 goroutines, failing at the first error.
func parallelDo(b *testing.B, n int, fn func(i int) error) {
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && !failed.Load(); i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil && !failed.Swap(true) {
					b.Errorf("item %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
}

// runShards seeds st with the placed instances (running, as berth writes
// them) through seed and measures the whole pass and the shards' passes
// over them.
func runShards(b *testing.B, cfg *config.Config, st store.Store, meter *readMeter, placed []placedInstance, seed func([]placedInstance)) {
	start := time.Now()
	seed(placed)
	b.Logf("seeded %d running instances in %s", len(placed), time.Since(start).Round(time.Second))
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: st, Logger: quiet})
	counted := &countingStore{Store: st}
	// Past the orphan grace, as a deployment's containers are.
	aged := func() time.Time { return time.Now().Add(reconcile.DefaultOrphanGrace + time.Minute) }
	n := len(placed)
	build := func(s fleetshard.Shard) *reconcile.Reconciler {
		one := configured.ForShard(cfg, s)
		rts, err := configured.Build(one, quiet, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rts.Close)
		rc, err := reconcile.New(reconcile.Options{Manager: m, Store: counted, Runtimes: rts.All(), Scope: cfg.Docker.Scope,
			Shard: s, MaxInstances: n, Clock: aged, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		return rc
	}
	count := fleetshard.Count(0, len(cfg.Docker.Hosts))
	shards := fleetshard.All(count)
	rcs := make([]*reconcile.Reconciler, len(shards))
	for i, s := range shards {
		rcs[i] = build(s)
	}
	whole := build(fleetshard.Whole())
	pass := func(rc *reconcile.Reconciler) (reconcile.Report, time.Duration) {
		t0 := time.Now()
		rep, err := rc.Run(context.Background())
		if err != nil || rep.Errors > 0 || rep.Actions() != 0 || rep.Truncated || rep.ListPartial {
			b.Fatalf("pass of %d/%d: %+v, %v", rep.Shard, rep.Shards, rep, err)
		}
		return rep, time.Since(t0)
	}
	// One pass of each, untimed: the runtimes' connections to their hosts
	// are open before the measured passes, as in a warm invocation.
	t0 := time.Now()
	for _, rc := range append([]*reconcile.Reconciler{whole}, rcs...) {
		pass(rc)
	}
	b.Logf("warm-up passes in %s", time.Since(t0).Round(time.Millisecond))
	reads := func() (pages, items, gets int64, requests int64, units float64) {
		return counted.pages.Load(), counted.items.Load(), counted.gets.Load(), meter.requestsN(), meter.unitsN()
	}
	report := func(b *testing.B, rounds int, p0, i0, g0, r0 int64, u0 float64) {
		p, i, g, r, u := reads()
		per := func(v int64) float64 { return float64(v) / float64(rounds) }
		b.ReportMetric(per(p-p0), "active-pages/round")
		b.ReportMetric(per(i-i0), "active-items/round")
		b.ReportMetric(per(g-g0), "point-reads/round")
		if meter != nil {
			b.ReportMetric(per(r-r0), "ddb-requests/round")
			b.ReportMetric((u-u0)/float64(rounds), "ddb-read-units/round")
		}
	}
	var wholeMS float64
	b.Run("whole", func(b *testing.B) {
		p0, i0, g0, r0, u0 := reads()
		var total time.Duration
		for range b.N {
			rep, d := pass(whole)
			total += d
			if rep.Instances != n {
				b.Fatalf("whole pass examined %d of %d", rep.Instances, n)
			}
		}
		wholeMS = ms(total) / float64(b.N)
		b.ReportMetric(wholeMS, "ms/pass")
		report(b, b.N, p0, i0, g0, r0, u0)
	})
	b.Run(fmt.Sprintf("%d-shards-sequential", count), func(b *testing.B) {
		p0, i0, g0, r0, u0 := reads()
		var slowest, sum time.Duration
		for range b.N {
			examined := 0
			for _, rc := range rcs {
				rep, d := pass(rc)
				examined += rep.Instances
				slowest, sum = max(slowest, d), sum+d
			}
			if examined != n {
				b.Fatalf("the shards examined %d of %d", examined, n)
			}
		}
		b.ReportMetric(ms(slowest), "slowest-shard-ms")
		b.ReportMetric(ms(sum)/float64(b.N*len(rcs)), "mean-shard-ms")
		b.ReportMetric(ms(sum)/float64(b.N), "total-ms")
		if wholeMS > 0 {
			b.ReportMetric(ms(slowest)/wholeMS, "slowest-shard-vs-whole")
		}
		report(b, b.N, p0, i0, g0, r0, u0)
	})
	b.Run(fmt.Sprintf("%d-shards-concurrent", count), func(b *testing.B) {
		p0, i0, g0, r0, u0 := reads()
		var slowest, wall time.Duration
		for range b.N {
			t0 := time.Now()
			durs := make([]time.Duration, len(rcs))
			var examined atomic.Int64
			var wg sync.WaitGroup
			for i, rc := range rcs {
				wg.Go(func() {
					rep, d := pass(rc)
					durs[i] = d
					examined.Add(int64(rep.Instances))
				})
			}
			wg.Wait()
			wall += time.Since(t0)
			for _, d := range durs {
				slowest = max(slowest, d)
			}
			if int(examined.Load()) != n {
				b.Fatalf("the shards examined %d of %d", examined.Load(), n)
			}
		}
		b.ReportMetric(ms(slowest), "slowest-shard-ms")
		b.ReportMetric(ms(wall)/float64(b.N), "total-ms")
		if wholeMS > 0 {
			b.ReportMetric(ms(wall)/float64(b.N)/wholeMS, "total-vs-whole")
		}
		report(b, b.N, p0, i0, g0, r0, u0)
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readMeter counts DynamoDB requests and the read units DynamoDB reports
// for them (ReturnConsumedCapacity TOTAL on every read), a Query or Scan
// that reports none counted at the minimum AWS bills (0.5, eventually
// consistent; 1 strongly).
type readMeter struct {
	requests   atomic.Int64
	milliUnits atomic.Int64
}

func (m *readMeter) requestsN() int64 {
	if m == nil {
		return 0
	}
	return m.requests.Load()
}

func (m *readMeter) unitsN() float64 {
	if m == nil {
		return 0
	}
	return float64(m.milliUnits.Load()) / 1000
}

// install is the SDK middleware (dynamodb.Options.APIOptions).
func (m *readMeter) install(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("berthReadMeter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			m.requests.Add(1)
			minimum := 0.0
			switch p := in.Parameters.(type) {
			case *dynamodb.QueryInput:
				p.ReturnConsumedCapacity, minimum = types.ReturnConsumedCapacityTotal, 0.5
				if p.ConsistentRead != nil && *p.ConsistentRead {
					minimum = 1
				}
			case *dynamodb.ScanInput:
				p.ReturnConsumedCapacity, minimum = types.ReturnConsumedCapacityTotal, 0.5
			case *dynamodb.GetItemInput:
				p.ReturnConsumedCapacity, minimum = types.ReturnConsumedCapacityTotal, 0.5
			}
			out, md, err := next.HandleInitialize(ctx, in)
			var cc *types.ConsumedCapacity
			switch r := out.Result.(type) {
			case *dynamodb.QueryOutput:
				cc = r.ConsumedCapacity
			case *dynamodb.ScanOutput:
				cc = r.ConsumedCapacity
			case *dynamodb.GetItemOutput:
				cc = r.ConsumedCapacity
			}
			if err == nil && minimum > 0 {
				units := 0.0
				if cc != nil && cc.CapacityUnits != nil {
					units = *cc.CapacityUnits
				}
				m.milliUnits.Add(int64(max(units, minimum) * 1000))
			}
			return out, md, err
		}), middleware.After)
}
