package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// scaleHosts is how many Docker hosts the scale benchmark's instances are
// spread over (issue #17: 100).
const scaleHosts = 100

// BenchmarkReconcileScale makes steady-state reconcile passes over 1,000
// and then 10,000 running instances spread over 100 Docker hosts, on the
// embedded store and on DynamoDB Local. Ten thousand real containers do
// not fit this machine, so the hosts are the two test engines, each listed
// under 50 host names (hostView): every host name is a Docker runtime of
// its own over its engine, so a pass makes one real ContainerList per host
// name, and a container of the engine shows under each of its host names as
// a distinct instance ("<instance id>.<host>"). Each engine holds
// instances/100 real running containers, so each listing returns as many
// real containers as a real host of that deployment would. The instances
// are written through the store's own create and transition path and match
// what the listings show, so a pass takes no action.
//
// Reported per size: runtime-lists/pass (must equal the hosts: one listing
// per host, nothing per instance; any other runtime call fails the run),
// the store reads of a pass (ListActive pages and items, point reads; on
// DynamoDB the requests it sent), ms/pass and, for 10k, the pass's time
// against the 1k pass of the same run. These passes cover every active
// instance (MaxInstances = instances); 10k-default-window is the pass under
// the default MaxInstances, which covers 1,000 and looks up the instances
// of the other hosts' containers one by one. On DynamoDB the seeding of
// the 10,000 instances also measures the index keys (indexKeyCounter).
func BenchmarkReconcileScale(b *testing.B) {
	image := testenv.TestImage(b)
	engines := []string{testenv.DockerHost(b), testenv.DockerHost2(b)}
	b.Run("bolt", func(b *testing.B) {
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "berth.db"), boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		runScale(b, s, nil, nil, image, engines)
	})
	b.Run("dynamodb", func(b *testing.B) {
		var requests ddbRequests
		keys := newIndexKeyCounter()
		base := teststores.DynamoClient(b)
		client := dynamodb.New(base.Options(), func(o *dynamodb.Options) {
			o.HTTPClient = &http.Client{Transport: ddbCounting{requests: &requests, keys: keys, next: http.DefaultTransport}}
		})
		prefix := fmt.Sprintf("rscale%d-", time.Now().UnixNano()%1e9)
		ctx := context.Background()
		if err := dynamostore.EnsureTables(ctx, client, prefix, dynamostore.WithoutTTL()); err != nil {
			b.Fatalf("creating tables on DynamoDB Local: %v", err)
		}
		b.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
		runScale(b, dynamostore.New(client, dynamostore.Options{TablePrefix: prefix}), &requests, keys, image, engines)
	})
}

// runScale seeds the 1k stage, measures it, grows to 10k and measures that.
func runScale(b *testing.B, st store.Store, requests *ddbRequests, keys *indexKeyCounter, image string, engines []string) {
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	scope := "rscale-" + strings.ToLower(container.NewID())
	view := newHostView(b, scope, image, engines)
	m := manager.New(manager.Options{Store: st, Logger: quiet})
	counted := &countingStore{Store: st}
	seeded := map[string]bool{}
	// The reconciler's clock runs past the orphan grace: a deployment's
	// containers are older than that, and the orphan step looks at a
	// container only once it is.
	aged := func() time.Time { return time.Now().Add(reconcile.DefaultOrphanGrace + time.Minute) }
	var pass1k float64
	for _, n := range []int{1000, 10000} {
		view.grow(b, n/scaleHosts)
		seedRunning(b, st, view, seeded, n)
		if b.Failed() {
			return
		}
		// MaxInstances n: the whole of the active instances in one pass.
		// "default-window" is the same store under the default
		// MaxInstances (DefaultMaxInstances), as deployed today.
		windows := []int{n}
		if n > reconcile.DefaultMaxInstances {
			windows = append(windows, 0)
		}
		for _, window := range windows {
			rc, err := reconcile.New(reconcile.Options{Manager: m, Store: counted, Runtimes: []runtime.Runtime{view}, Scope: scope,
				MaxInstances: window, Clock: aged, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("%dk", n/1000)
			if window == 0 {
				name += "-default-window"
			}
			b.Run(name, func(b *testing.B) {
				view.calls.reset()
				counted.reset()
				if requests != nil {
					requests.reset()
				}
				want := n
				if window == 0 {
					want = reconcile.DefaultMaxInstances
				}
				start := time.Now()
				for range b.N {
					rep, err := rc.Run(ctx)
					if err != nil || rep.Errors > 0 || rep.Actions() != 0 || rep.Instances != want || rep.Truncated != (window == 0) ||
						rep.ListPartial || rep.OrphansDeferred != 0 {
						b.Fatalf("pass: %+v, %v", rep, err)
					}
				}
				perPass := float64(time.Since(start).Milliseconds()) / float64(b.N)
				per := func(v int64) float64 { return float64(v) / float64(b.N) }
				if other := view.calls.other.Load(); other != 0 {
					b.Fatalf("%d runtime calls besides List in %d passes", other, b.N)
				}
				b.ReportMetric(per(view.calls.lists.Load()), "runtime-lists/pass")
				b.ReportMetric(scaleHosts, "hosts")
				b.ReportMetric(per(counted.pages.Load()), "active-pages/pass")
				b.ReportMetric(per(counted.items.Load()), "active-items/pass")
				b.ReportMetric(per(counted.gets.Load()), "point-reads/pass")
				if requests != nil {
					b.ReportMetric(per(requests.total.Load()), "ddb-requests/pass")
					b.ReportMetric(per(requests.query.Load()), "ddb-queries/pass")
				}
				b.ReportMetric(perPass, "ms/pass")
				if window == 0 {
					return
				}
				if n == 10000 {
					keys.report(b)
				}
				if n == 1000 {
					pass1k = perPass
				} else if pass1k > 0 {
					b.ReportMetric(perPass/pass1k, "pass-vs-1k")
				}
			})
		}
	}
}

// seedRunning brings the store to n running instances, one per (host,
// container) pair the view lists, each written as berth writes it: created
// (instance, outbox item, event, admission slot), claimed (pending →
// creating, the create item completed) and started (creating → running on
// its host).
func seedRunning(b *testing.B, st store.Store, view *hostView, seeded map[string]bool, n int) {
	ctx := context.Background()
	var todo []string
	for _, host := range view.names {
		for _, real := range view.containers(host) {
			if id := virtualID(real, host); !seeded[id] {
				seeded[id] = true
				todo = append(todo, id+"|"+host)
			}
		}
	}
	if len(seeded) != n {
		b.Fatalf("%d (host, container) pairs, want %d", len(seeded), n)
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for pair := range work {
				id, host, _ := strings.Cut(pair, "|")
				if err := seedOne(ctx, st, id, host); err != nil {
					b.Error(err)
					for range work { // drain: one failure says enough
					}
					return
				}
			}
		})
	}
	for _, p := range todo {
		work <- p
	}
	close(work)
	wg.Wait()
}

func seedOne(ctx context.Context, st store.Store, id, host string) error {
	now := time.Now().UTC()
	spec := seedSpec
	ob := container.NewID()
	inst, err := st.CreateInstance(ctx, store.CreateParams{
		Instance: container.Instance{ID: id, Name: id, Owner: "alice", Template: "sleeper", Runtime: container.RuntimeDocker,
			Image: spec.Image, Status: fsm.Pending, Version: 1, Spec: spec, CreatedAt: now, UpdatedAt: now},
		Outbox: container.OutboxItem{ID: ob, InstanceID: id, Op: container.OpCreate, InstanceVersion: 1,
			State: container.OutboxPending, CreatedAt: now, UpdatedAt: now},
		Event: container.Event{InstanceID: id, Type: container.EventCreateRequested, To: fsm.Pending, At: now, Actor: "alice"},
	})
	if err != nil {
		return err
	}
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		p := store.TransitionParams{ID: id, ExpectVersion: inst.Version, From: inst.Status, To: to,
			Event: &container.Event{Type: "Seed", From: inst.Status, To: to, At: now, Actor: container.ActorSystem},
			Update: func(in *container.Instance) {
				in.RuntimeNodeName = host
				if to == fsm.Running {
					in.StartedAt = &now
				}
			}}
		if to == fsm.Creating {
			p.CompleteOutboxID = ob
		}
		if inst, err = st.Transition(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// seededInstance is the instance seedOne leaves behind, as an import
// loads it: running on host since now, after its create and two
// transitions (version and event_seq 3), counted in no quota or usage.
func seededInstance(id, host string, now time.Time) container.Instance {
	return container.Instance{ID: id, Name: id, Owner: "alice", Template: "sleeper", Runtime: container.RuntimeDocker,
		Image: seedSpec.Image, Status: fsm.Running, Version: 3, EventSeq: 3, Spec: seedSpec, RuntimeNodeName: host,
		CreatedAt: now, UpdatedAt: now, StartedAt: &now}
}

// seedSpec is the spec of every seeded instance.
var seedSpec = container.Spec{Runtime: container.RuntimeDocker, Image: "berth-test/busybox:1", Command: []string{"sleep", "3600"}}

// virtualID is the instance a real container stands for under one host name.
func virtualID(real, host string) string { return real + "." + host }

// hostView is the scale benchmark's runtime: scaleHosts host names over a
// few real engines (name i on engine i mod engines), each name its own
// Docker runtime of one host, so that List makes one real ContainerList
// per host name. A container listed under host h is reported as the
// instance virtualID(id, h); nothing else of the listing is changed. It
// counts its calls: List once per host name, anything else as other.
type hostView struct {
	runtime.Runtime                   // the engines under their own names: makes the real containers
	names           []string          // host names, in order
	perHost         []*docker.Runtime // one per name
	engineOf        []string          // engine host name (e0, e1, …) per name
	image           string
	calls           viewCalls

	mu   sync.Mutex
	real map[string][]string // engine name → ids of its real containers
}

type viewCalls struct{ lists, other atomic.Int64 }

func (c *viewCalls) reset() { c.lists.Store(0); c.other.Store(0) }

func newHostView(b *testing.B, scope, image string, engines []string) *hostView {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	var hosts []config.DockerHost
	for i, ep := range engines {
		hosts = append(hosts, config.DockerHost{Name: fmt.Sprintf("e%d", i), Endpoint: ep, NetworkMode: "none"})
	}
	base, err := docker.New(config.Docker{Hosts: hosts}, docker.Options{Scope: scope, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := base.Ping(ctx); err != nil {
		testenv.Missing(b, "two Docker engines", err.Error())
	}
	v := &hostView{Runtime: base, image: image, real: map[string][]string{}}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		states, _ := base.List(ctx)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, s := range states {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				_ = base.Delete(ctx, s.Ref)
			})
		}
		wg.Wait()
		base.Close()
		for _, rt := range v.perHost {
			rt.Close()
		}
	})
	for i := range scaleHosts {
		name := fmt.Sprintf("h%03d", i)
		h := hosts[i%len(hosts)]
		rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: name, Endpoint: h.Endpoint, NetworkMode: "none"}}},
			docker.Options{Scope: scope, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		v.names = append(v.names, name)
		v.perHost = append(v.perHost, rt)
		v.engineOf = append(v.engineOf, h.Name)
	}
	return v
}

// grow starts real running containers until every engine holds perEngine.
func (v *hostView) grow(b *testing.B, perEngine int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, engine := range []string{"e0", "e1"} {
		for range perEngine - len(v.real[engine]) {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				inst := container.Instance{ID: container.NewID(), Runtime: container.RuntimeDocker, RuntimeNodeName: engine,
					Spec: container.Spec{Runtime: container.RuntimeDocker, Image: v.image, PullPolicy: container.PullNever,
						Command: []string{"sleep", "3600"}}}
				ref, err := v.Create(ctx, inst)
				if err == nil {
					err = v.Start(ctx, ref)
				}
				if err != nil {
					b.Errorf("real container on %s: %v", engine, err)
					return
				}
				v.mu.Lock()
				v.real[engine] = append(v.real[engine], inst.ID)
				v.mu.Unlock()
			})
		}
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	for _, engine := range []string{"e0", "e1"} {
		slices.Sort(v.real[engine])
	}
	// Every container running before the first pass: a pass would
	// otherwise see some still starting.
	for deadline := time.Now().Add(time.Minute); ; {
		states, err := v.Runtime.List(ctx)
		running := 0
		for _, s := range states {
			if s.Phase == runtime.PhaseRunning {
				running++
			}
		}
		if err == nil && running == 2*perEngine {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d real containers running after a minute (%v)", running, 2*perEngine, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// containers returns the ids of the real containers host lists.
func (v *hostView) containers(host string) []string {
	i := slices.Index(v.names, host)
	return v.real[v.engineOf[i]]
}

// List lists every host name once, in parallel as the Docker runtime lists
// its hosts.
func (v *hostView) List(ctx context.Context) ([]runtime.State, error) {
	per := make([][]runtime.State, len(v.perHost))
	errs := make([]error, len(v.perHost))
	var wg sync.WaitGroup
	for i, rt := range v.perHost {
		wg.Go(func() {
			v.calls.lists.Add(1)
			states, err := rt.List(ctx)
			for j := range states {
				if states[j].InstanceID != "" {
					states[j].InstanceID = virtualID(states[j].InstanceID, v.names[i])
					states[j].Ref.InstanceID = states[j].InstanceID
				}
			}
			per[i], errs[i] = states, err
		})
	}
	wg.Wait()
	var out []runtime.State
	for _, s := range per {
		out = append(out, s...)
	}
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// The calls a steady pass must not make: counted, then refused.

func (v *hostView) Inspect(context.Context, runtime.Ref) (runtime.State, error) {
	v.calls.other.Add(1)
	return runtime.State{}, runtime.ErrInvalid
}

func (v *hostView) Delete(context.Context, runtime.Ref) error {
	v.calls.other.Add(1)
	return runtime.ErrInvalid
}

func (v *hostView) Stop(context.Context, runtime.Ref, time.Duration) error {
	v.calls.other.Add(1)
	return runtime.ErrInvalid
}

// countingStore counts the reads a pass makes of the store.
type countingStore struct {
	store.Store
	pages, items, gets atomic.Int64
}

func (c *countingStore) reset() { c.pages.Store(0); c.items.Store(0); c.gets.Store(0) }

func (c *countingStore) ListActive(ctx context.Context, cursor string, limit int) (store.Page[container.Instance], error) {
	p, err := c.Store.ListActive(ctx, cursor, limit)
	c.pages.Add(1)
	c.items.Add(int64(len(p.Items)))
	return p, err
}

// ListActiveInBucket is a shard's ListActive: counted as one.
func (c *countingStore) ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (store.Page[container.Instance], error) {
	p, err := c.Store.ListActiveInBucket(ctx, bucket, cursor, limit)
	c.pages.Add(1)
	c.items.Add(int64(len(p.Items)))
	return p, err
}

func (c *countingStore) GetInstance(ctx context.Context, id string) (container.Instance, error) {
	c.gets.Add(1)
	return c.Store.GetInstance(ctx, id)
}

// ddbRequests counts the requests sent to DynamoDB.
type ddbRequests struct{ total, query atomic.Int64 }

func (r *ddbRequests) reset() { r.total.Store(0); r.query.Store(0) }

// ddbCounting counts DynamoDB requests and feeds the write requests'
// bodies to the index key counter.
type ddbCounting struct {
	requests *ddbRequests
	keys     *indexKeyCounter
	next     http.RoundTripper
}

func (c ddbCounting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.total.Add(1)
	op := r.Header.Get("X-Amz-Target")
	if strings.HasSuffix(op, ".Query") {
		c.requests.query.Add(1)
	}
	if (strings.HasSuffix(op, ".TransactWriteItems") || strings.HasSuffix(op, ".PutItem")) && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		c.keys.add(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return c.next.RoundTrip(r)
}

// indexKeyCounter counts, per index and partition key value, the index
// entries the store's writes put: every Put of an item carrying an index
// key attribute (an instance's status_key, a pending outbox item's
// undispatched) writes its index at that key. The removal of an entry
// (status change, dispatch) lands on the key it was put at, in the same
// shard, so it follows the same spread and is not counted separately.
type indexKeyCounter struct {
	mu     sync.Mutex
	counts map[string]map[string]int // attribute → key value → writes
}

func newIndexKeyCounter() *indexKeyCounter {
	return &indexKeyCounter{counts: map[string]map[string]int{}}
}

func (k *indexKeyCounter) add(body []byte) {
	type attr struct {
		S string `json:"S"`
	}
	var req struct {
		Item          map[string]attr `json:"Item"`
		TransactItems []struct {
			Put *struct {
				Item map[string]attr `json:"Item"`
			} `json:"Put"`
		} `json:"TransactItems"`
	}
	if json.Unmarshal(body, &req) != nil {
		return
	}
	items := []map[string]attr{req.Item}
	for _, ti := range req.TransactItems {
		if ti.Put != nil {
			items = append(items, ti.Put.Item)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, it := range items {
		for _, a := range []string{dynamostore.AttrStatusKey, dynamostore.AttrUndispatched} {
			if v, ok := it[a]; ok && v.S != "" {
				if k.counts[a] == nil {
					k.counts[a] = map[string]int{}
				}
				k.counts[a][v.S]++
			}
		}
	}
}

// report gives, per index, the share of its writes the busiest key took,
// the goal 1/IndexShards, and the share the busiest key would have taken
// without shards (the same writes by their unsharded value: status, or
// "pending").
func (k *indexKeyCounter) report(b *testing.B) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for attr, name := range map[string]string{dynamostore.AttrStatusKey: "status", dynamostore.AttrUndispatched: "undispatched"} {
		total, busiest := 0, 0
		unsharded := map[string]int{}
		for key, n := range k.counts[attr] {
			total += n
			busiest = max(busiest, n)
			base, _, _ := strings.Cut(key, "#")
			unsharded[base] += n
		}
		if total == 0 {
			b.Fatalf("no %s index writes counted", name)
		}
		busiestUnsharded := 0
		for _, n := range unsharded {
			busiestUnsharded = max(busiestUnsharded, n)
		}
		b.ReportMetric(float64(total), name+"-index-writes")
		b.ReportMetric(float64(busiest)/float64(total), name+"-busiest-key-share")
		b.ReportMetric(float64(busiestUnsharded)/float64(total), name+"-busiest-unsharded-share")
		b.ReportMetric(float64(busiest)/float64(total)*dynamostore.IndexShards, name+"-busiest-vs-1/N")
		if attr != dynamostore.AttrStatusKey {
			continue
		}
		// Within each status (what one unsharded key took before): the
		// busiest shard's share of that status's writes, against 1/N.
		worst := 0.0
		for key, n := range k.counts[attr] {
			base, _, _ := strings.Cut(key, "#")
			worst = max(worst, float64(n)/float64(unsharded[base]))
		}
		b.ReportMetric(worst*dynamostore.IndexShards, "status-busiest-in-its-status-vs-1/N")
	}
	b.ReportMetric(1/float64(dynamostore.IndexShards), "goal-share-1/N")
}
