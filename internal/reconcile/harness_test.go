package reconcile_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

var alice = identity.Caller{User: "alice"}

// node is the name of the test's one real Docker host.
const node = "local"

// rig is one test's real parts: a store backend, the manager on it, and a
// Docker runtime of the test's own scope on the real engine (plus, when
// asked, a second host that is down). The reconciler's clock runs ahead of
// the real one by offset, which is how tests step past grace periods and
// timeouts without sleeping.
type rig struct {
	t      *testing.T
	store  store.Store
	m      *manager.Manager
	rt     *docker.Runtime
	scope  string
	image  string
	offset atomic.Int64 // nanoseconds the reconciler's clock is ahead
	logs   *testenv.SyncBuffer
}

// newRig opens the backend and a runtime whose hosts are the real engine
// and, for each name in down, a host on a socket that does not exist.
func newRig(t *testing.T, s store.Store, down ...string) *rig {
	t.Helper()
	image := testenv.TestImage(t)
	endpoint := testenv.DockerHost(t)
	scope := "rc-" + strings.ToLower(container.NewID())
	hosts := []config.DockerHost{{Name: node, Endpoint: endpoint, NetworkMode: "none"}}
	for _, d := range down {
		hosts = append(hosts, config.DockerHost{Name: d, Endpoint: "unix:///run/berth-test/no-such-engine-" + scope + ".sock"})
	}
	rt, err := docker.New(config.Docker{Hosts: hosts}, docker.Options{Scope: scope, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.Client(node).Ping(ctx, pingOpts); err != nil {
		testenv.Missing(t, "a Docker engine", err.Error())
	}
	t.Cleanup(func() {
		// Every container of the scope, whatever the test left.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, _ := rt.List(ctx)
		for _, st := range states {
			if err := rt.Delete(ctx, st.Ref); err != nil {
				t.Errorf("cleanup: delete %s: %v", st.Name, err)
			}
		}
		rt.Close()
	})
	return rigOn(t, s, rt, scope, image)
}

// sharing returns a rig over store s on r's runtime: it sees, and its
// reconciler compares s with, the same containers as r.
func (r *rig) sharing(t *testing.T, s store.Store) *rig {
	t.Helper()
	return rigOn(t, s, r.rt, r.scope, r.image)
}

// rigOn makes the rig of store s over runtime rt (of scope): the manager on
// s with the test templates, and the reconciler's logs, shown if t fails.
func rigOn(t *testing.T, s store.Store, rt *docker.Runtime, scope, image string) *rig {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reconciler logs:\n%s", logs.String())
		}
	})
	m := manager.New(manager.Options{Store: s, MaxPending: 100, Logger: logger})
	r := &rig{t: t, store: s, m: m, rt: rt, scope: scope, image: image, logs: logs}
	admin := identity.Caller{User: "root", Admin: true}
	for name, cmd := range map[string]string{"sleeper": "sleep 3600", "exit3": "exit 3"} {
		if _, _, err := m.PutTemplate(context.Background(), admin, container.Template{Name: name, Runtime: "docker",
			Image: image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", cmd}}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// each runs fn on every store backend with a fresh rig.
func each(t *testing.T, fn func(t *testing.T, r *rig)) { eachWith(t, nil, fn) }

// eachWith is each with hosts that are down besides the real one.
func eachWith(t *testing.T, down []string, fn func(t *testing.T, r *rig)) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		fn(t, newRig(t, b.Open(t, time.Now), down...))
	})
}

func (r *rig) advance(d time.Duration) { r.offset.Store(int64(d)) }

func (r *rig) clock() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) }

// reconciler returns a reconciler on the rig, with opts applied.
func (r *rig) reconciler(opts ...func(*reconcile.Options)) *reconcile.Reconciler {
	r.t.Helper()
	o := reconcile.Options{
		Manager: r.m, Store: r.store, Runtimes: []runtime.Runtime{r.rt}, Scope: r.scope, Clock: r.clock,
		Logger: slog.New(slog.NewJSONHandler(r.logs, nil)),
		// The sleeper's process is PID 1 and ignores SIGTERM, so a pass
		// that stops a failed instance's container waits out the whole
		// grace before the SIGKILL: the default (10 s) was most of the
		// terminal tests' time. 1 s (the engine's smallest, as the worker
		// tests use) still goes through SIGTERM, grace, SIGKILL.
		StopGrace: time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	rc, err := reconcile.New(o)
	if err != nil {
		r.t.Fatal(err)
	}
	return rc
}

// run makes one pass and fails the test on an error or an error count.
func (r *rig) run(rc *reconcile.Reconciler) reconcile.Report {
	r.t.Helper()
	rep, err := rc.Run(testenv.Context(r.t, 2*time.Minute))
	if err != nil {
		r.t.Fatalf("Run: %v (report %+v)", err, rep)
	}
	if rep.Errors > 0 {
		r.t.Fatalf("Run reported errors: %+v", rep)
	}
	return rep
}

// create makes an instance from a template: pending, with its create item.
func (r *rig) create(tpl string) container.Instance {
	r.t.Helper()
	return managertest.Create(r.t, r.m, alice, tpl)
}

// move makes one conditional transition, as a worker would.
func (r *rig) move(inst container.Instance, to fsm.Status, update func(*container.Instance)) container.Instance {
	r.t.Helper()
	out, err := r.store.Transition(context.Background(), store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to, Update: update,
		Event: &container.Event{Type: "Test", From: inst.Status, To: to, At: time.Now().UTC(), Actor: container.ActorSystem},
	})
	if err != nil {
		r.t.Fatalf("transition %s %s → %s: %v", inst.ID, inst.Status, to, err)
	}
	return out
}

// creating claims a pending instance for a create (node recorded when given).
func (r *rig) creating(inst container.Instance, nodeName string) container.Instance {
	return r.move(inst, fsm.Creating, func(i *container.Instance) { i.RuntimeNodeName = nodeName })
}

// running moves a creating instance to running as the state loop would.
func (r *rig) running(inst container.Instance, nodeName string) container.Instance {
	return r.move(inst, fsm.Running, func(i *container.Instance) {
		now := time.Now().UTC()
		i.RuntimeNodeName, i.StartedAt = nodeName, &now
	})
}

// start creates and starts the instance's container on the real engine.
func (r *rig) start(inst container.Instance) runtime.Ref {
	r.t.Helper()
	ctx := testenv.Context(r.t, time.Minute)
	ref, err := r.rt.Create(ctx, inst)
	if err != nil {
		r.t.Fatalf("create container: %v", err)
	}
	if err := r.rt.Start(ctx, ref); err != nil {
		r.t.Fatalf("start container: %v", err)
	}
	return ref
}

// waitPhase polls the container until it is in phase, with a deadline.
func (r *rig) waitPhase(ref runtime.Ref, phase runtime.Phase) runtime.State {
	r.t.Helper()
	ctx := testenv.Context(r.t, 30*time.Second)
	for {
		st, err := r.rt.Inspect(ctx, ref)
		if err == nil && st.Phase == phase {
			return st
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("container %s never reached %s: last %+v, %v", ref.InstanceID, phase, st, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// exists reports whether the instance's container is on the engine.
func (r *rig) exists(ref runtime.Ref) bool {
	r.t.Helper()
	_, err := r.rt.Inspect(testenv.Context(r.t, 30*time.Second), ref)
	if err != nil && !runtime.IsNotFound(err) {
		r.t.Fatalf("inspect: %v", err)
	}
	return err == nil
}

func (r *rig) get(id string) container.Instance {
	r.t.Helper()
	inst, err := r.store.GetInstance(context.Background(), id)
	if err != nil {
		r.t.Fatalf("get %s: %v", id, err)
	}
	return inst
}

func (r *rig) events(id string) []container.Event {
	r.t.Helper()
	var out []container.Event
	cursor := ""
	for {
		page, err := r.store.ListEvents(context.Background(), id, cursor, 100)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

// undispatched returns the instance's undispatched outbox items (those the
// reconciler wrote carry its clock, which runs ahead).
func (r *rig) undispatched(id string) []container.OutboxItem {
	r.t.Helper()
	items, err := r.store.ListUndispatched(context.Background(), time.Now().Add(10000*time.Hour), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []container.OutboxItem
	for _, it := range items {
		if it.InstanceID == id {
			out = append(out, it)
		}
	}
	return out
}

// dispatchAll marks the instance's undispatched items dispatched, as the
// dispatcher does when it hands them to a queue (which then loses them).
func (r *rig) dispatchAll(id string) []container.OutboxItem {
	r.t.Helper()
	items := r.undispatched(id)
	for _, it := range items {
		if err := r.store.MarkDispatched(context.Background(), it.ID, time.Now()); err != nil {
			r.t.Fatal(err)
		}
	}
	return items
}

func wantStatus(t *testing.T, inst container.Instance, want fsm.Status) {
	t.Helper()
	if inst.Status != want {
		t.Fatalf("instance %s is %s (%q), want %s", inst.ID, inst.Status, inst.StatusReason, want)
	}
}

func noRejections(t *testing.T, r *rig, ids ...string) {
	t.Helper()
	for _, id := range ids {
		for _, ev := range r.events(id) {
			if ev.Type == container.EventTransitionReject {
				t.Errorf("instance %s: TransitionRejected event: %+v", id, ev)
			}
		}
	}
}

var pingOpts = client.PingOptions{NegotiateAPIVersion: true}

var errSweep = errors.New("sweep failed")

func configDefaults() config.Container { return config.Default().Container }
