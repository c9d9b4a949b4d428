package worker_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/monitor"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/worker"
)

var alice = identity.Caller{User: "alice"}

// faults wraps the real Docker runtime to inject failures; every call
// that is not failed goes to the engine.
type faults struct {
	runtime.Runtime
	createFails atomic.Int32 // fail this many Creates with ErrUnavailable
	startFails  atomic.Int32 // fail this many Starts with ErrFailed after they succeeded (a crash before the status write)
	alwaysFail  atomic.Bool  // every Create fails with ErrFailed (an engine that answers 500)
	// down makes every call fail with ErrUnavailable, as an unreachable
	// engine does; downCalls counts the calls it refused.
	down      atomic.Bool
	downCalls atomic.Int32
	// upAfter, when positive, ends the outage at the upAfter-th refused
	// call and closes up.
	upAfter int32
	up      chan struct{}
	// slowStable makes Inspect report "created" for this long after Start,
	// like an image whose process takes a while to come up.
	slowStable time.Duration
	// beforeCreate runs once, before the next Create reaches the engine.
	beforeCreate func()

	mu        sync.Mutex
	started   map[string]time.Time
	inFlight  int // creates between Create and a stable Inspect
	maxFlight int
	stable    map[string]bool
}

// unreachable is the error of a call made while the engine is down.
func (f *faults) unreachable(op, id string) error {
	if !f.down.Load() {
		return nil
	}
	if n := f.downCalls.Add(1); n == f.upAfter {
		f.down.Store(false)
		close(f.up)
	}
	return runtime.Errorf(runtime.ErrUnavailable, op, id, "local", "injected: connection refused")
}

func (f *faults) Place(ctx context.Context, inst container.Instance) (string, error) {
	if err := f.unreachable("place", inst.ID); err != nil {
		return "", err
	}
	return f.Runtime.Place(ctx, inst)
}

func (f *faults) Stop(ctx context.Context, ref runtime.Ref, grace time.Duration) error {
	if err := f.unreachable("stop", ref.InstanceID); err != nil {
		return err
	}
	return f.Runtime.Stop(ctx, ref, grace)
}

func (f *faults) Delete(ctx context.Context, ref runtime.Ref) error {
	if err := f.unreachable("delete", ref.InstanceID); err != nil {
		return err
	}
	return f.Runtime.Delete(ctx, ref)
}

func (f *faults) List(ctx context.Context) ([]runtime.State, error) {
	if err := f.unreachable("list", ""); err != nil {
		return nil, err
	}
	return f.Runtime.List(ctx)
}

func (f *faults) Create(ctx context.Context, inst container.Instance) (runtime.Ref, error) {
	if err := f.unreachable("create", inst.ID); err != nil {
		return runtime.Ref{}, err
	}
	if f.alwaysFail.Load() {
		return runtime.Ref{}, runtime.Errorf(runtime.ErrFailed, "create", inst.ID, "", "injected: engine error")
	}
	if f.createFails.Add(-1) >= 0 {
		return runtime.Ref{}, runtime.Errorf(runtime.ErrUnavailable, "create", inst.ID, "", "injected: engine unavailable")
	}
	if hook := f.beforeCreate; hook != nil {
		f.beforeCreate = nil
		hook()
	}
	ref, err := f.Runtime.Create(ctx, inst)
	if err == nil {
		f.mu.Lock()
		if !f.stable[inst.ID] {
			if _, seen := f.started[inst.ID]; !seen {
				f.inFlight++
				f.maxFlight = max(f.maxFlight, f.inFlight)
				f.started[inst.ID] = time.Time{}
			}
		}
		f.mu.Unlock()
	}
	return ref, err
}

func (f *faults) Start(ctx context.Context, ref runtime.Ref) error {
	if err := f.unreachable("start", ref.InstanceID); err != nil {
		return err
	}
	err := f.Runtime.Start(ctx, ref)
	if err == nil {
		f.mu.Lock()
		if t, ok := f.started[ref.InstanceID]; !ok || t.IsZero() {
			f.started[ref.InstanceID] = time.Now()
		}
		f.mu.Unlock()
		if f.startFails.Add(-1) >= 0 {
			return runtime.Errorf(runtime.ErrFailed, "start", ref.InstanceID, ref.Node, "injected: crash after start")
		}
	}
	return err
}

func (f *faults) Inspect(ctx context.Context, ref runtime.Ref) (runtime.State, error) {
	if err := f.unreachable("inspect", ref.InstanceID); err != nil {
		return runtime.State{}, err
	}
	st, err := f.Runtime.Inspect(ctx, ref)
	if err != nil {
		return st, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.started[ref.InstanceID]; ok && f.slowStable > 0 && st.Phase == runtime.PhaseRunning && time.Since(t) < f.slowStable {
		st.Phase = runtime.PhaseCreated
		return st, nil
	}
	if (st.Phase == runtime.PhaseRunning || st.Phase == runtime.PhaseExited) && !f.stable[ref.InstanceID] {
		if _, ok := f.started[ref.InstanceID]; ok {
			f.inFlight--
		}
		f.stable[ref.InstanceID] = true
	}
	return st, nil
}

type rig struct {
	t      *testing.T
	store  store.Store
	m      *manager.Manager
	rt     *faults
	w      *worker.Worker
	slots  *worker.Slots
	engine *docker.Runtime
}

func newRig(t *testing.T, b teststores.Backend, slots int) *rig {
	t.Helper()
	return newRigWith(t, b, slots, manager.GroupPolicies{})
}

// newRigWith is newRig with the group cleanup policies set.
func newRigWith(t *testing.T, b teststores.Backend, slots int, groups manager.GroupPolicies) *rig {
	t.Helper()
	image := testenv.TestImage(t)
	s := b.Open(t, time.Now)
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	eng := dockertest.Engine(t)
	f := &faults{Runtime: eng, started: map[string]time.Time{}, stable: map[string]bool{}}
	res, err := runtime.NewResolver(f)
	if err != nil {
		t.Fatal(err)
	}
	m := manager.New(manager.Options{Store: s, MaxPending: 50, Logger: logger, BindRoots: []string{"/srv/berth"}, Groups: groups})
	r := &rig{t: t, store: s, m: m, rt: f, engine: eng}
	if slots > 0 {
		r.slots = worker.NewSlots(slots)
	}
	r.w = worker.New(worker.Options{Manager: m, Store: s, Runtimes: res, CreateSlots: r.slots, Logger: logger,
		MaxAttempts: 5, StopGrace: time.Second, StablePoll: 20 * time.Millisecond, CreateStartTimeout: 30 * time.Second,
		Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	// The state loop, as the local server runs it: runtime events → OnEvent.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); monitor.Run(watchCtx, eng, m, logger) }()
	t.Cleanup(func() { stopWatch(); <-watchDone })
	admin := identity.Caller{User: "root", Admin: true}
	for name, cmd := range map[string]string{"sleeper": "sleep 3600", "exit0": "exit 0", "exit3": "exit 3"} {
		if _, _, err := m.PutTemplate(context.Background(), admin, container.Template{Name: name, Runtime: "docker",
			Image: image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", cmd}}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// create makes an instance from a template: pending, with its create item.
func (r *rig) create(tpl string) container.Instance {
	r.t.Helper()
	return managertest.Create(r.t, r.m, alice, tpl)
}

// pending returns the instance's outbox items that are not finished, oldest first.
func (r *rig) item(id string, op container.Op) container.OutboxItem {
	r.t.Helper()
	items, err := r.store.ListUndispatched(context.Background(), time.Now().Add(time.Hour), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, it := range items {
		if it.InstanceID == id && it.Op == op {
			return it
		}
	}
	r.t.Fatalf("no undispatched %s item for %s", op, id)
	return container.OutboxItem{}
}

func delivery(t *testing.T, it container.OutboxItem, receive int) queue.Delivery {
	body, err := outbox.FromItem(it).Encode()
	if err != nil {
		t.Fatal(err)
	}
	return queue.Delivery{MessageID: it.ID + "-" + string(rune('0'+receive)), Body: body, ReceiveCount: receive, SentAt: time.Now()}
}

// run processes the instance's pending op item once and returns the result.
func (r *rig) run(id string, op container.Op) worker.Result {
	r.t.Helper()
	return r.w.Process(context.Background(), delivery(r.t, r.item(id, op), 1))
}

func (r *rig) get(id string) container.Instance {
	r.t.Helper()
	inst, err := r.store.GetInstance(context.Background(), id)
	if err != nil {
		r.t.Fatalf("GetInstance(%s): %v", id, err)
	}
	return inst
}

// eventually waits for the instance to reach want (the state loop applies
// runtime events asynchronously).
func (r *rig) eventually(id string, want fsm.Status) container.Instance {
	r.t.Helper()
	inst, err := r.m.Wait(context.Background(), identity.Caller{User: "root", Admin: true}, id, want, 20*time.Second)
	if err != nil {
		r.t.Fatalf("waiting for %s to be %s: %v (%s)", id, want, err, inst.StatusReason)
	}
	return inst
}

func (r *rig) wantStatus(id string, want fsm.Status) container.Instance {
	r.t.Helper()
	inst := r.get(id)
	if inst.Status != want {
		r.t.Fatalf("instance %s is %s (%s), want %s", id, inst.Status, inst.StatusReason, want)
	}
	return inst
}

// containers lists the engine's containers of this test's scope.
func (r *rig) containers() []runtime.State {
	r.t.Helper()
	states, err := r.engine.List(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return states
}
