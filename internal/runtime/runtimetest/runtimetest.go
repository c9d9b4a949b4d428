// Package runtimetest is the Runtime contract's conformance suite: the same
// cases run against every runtime (Docker engines, Kubernetes clusters), so
// the runtimes cannot drift apart in what the workers, the state loop and
// the reconciler rely on.
package runtimetest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// Harness is one runtime under test and how to make instances it can run.
// Every call gives a runtime of a scope of its own, so parallel tests and
// other packages sharing the same engines or clusters do not see each
// other's containers; the harness removes what its scope left at the end.
type Harness struct {
	Runtime runtime.Runtime
	// Running returns a new instance (not yet placed) whose container runs
	// until it is stopped, and stops promptly on SIGTERM.
	Running func(t *testing.T) container.Instance
	// Exiting returns a new instance whose container ends by itself, soon
	// after it started, with code.
	Exiting func(t *testing.T, code int) container.Instance
	// Printing returns a new instance whose container runs script with
	// `sh -c` and ends when it does. RunLogs needs it; Run does not.
	Printing func(t *testing.T, script string) container.Instance
	// Timeout bounds each case. Defaults to 90 s.
	Timeout time.Duration
	// BindRoot is a root every node of Runtime allows bind sources under
	// (allowed_bind_roots, allowed_host_path_roots), not "/". The
	// host-path cases need it.
	BindRoot string
	// At returns a runtime of the same kind, of one node named AtNode
	// reached at endpoint, a loopback http://host:port URL (a Docker
	// engine's tcp:// endpoint, a cluster's API server). The error-kind
	// cases point it at nothing, and at a server whose answers no client
	// can read.
	At func(t *testing.T, endpoint string) runtime.Runtime
	// StatsServed says the runtime reads usage on the harness's nodes
	// (runtime.StatsReader); without it Stats must be ErrNotServed (a
	// cluster with no metrics API).
	StatsServed bool
	// ExecServed says the runtime runs commands in the harness's
	// containers (runtime.Execer); without it (kwok's Pods have no
	// processes) an exec must fail naming the operation.
	ExecServed bool
}

// Run runs every case, each with a harness of its own from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CreateRunsAndIsLabelled", testCreateRuns},
		{"CreateIsIdempotent", testCreateIdempotent},
		{"StopThenStart", testStopThenStart},
		{"Delete", testDelete},
		{"ExitCodes", testExitCodes},
		{"WatchReportsLifecycle", testWatch},
		{"MissingObject", testMissing},
		{"LogsOfMissingObject", testLogsMissing},
		{"ErrorKinds", testErrorKinds},
		{"HostPaths", testHostPaths},
		{"Stats", testStats},
		{"PauseResume", testPause},
		{"Exec", testExec},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			if h.Timeout == 0 {
				h.Timeout = 90 * time.Second
			}
			c.fn(t, h)
		})
	}
	t.Run("ListSeesOnlyItsScope", func(t *testing.T) {
		t.Parallel()
		testListScope(t, newHarness(t), newHarness(t))
	})
}

// createStarted creates and starts inst as a worker does, and records the
// node placement chose on it.
func createStarted(t *testing.T, ctx context.Context, rt runtime.Runtime, inst *container.Instance) runtime.Ref {
	t.Helper()
	node, err := rt.Place(ctx, *inst)
	if err != nil {
		t.Fatalf("place: %v", err)
	}
	inst.RuntimeNodeName = node
	ref, err := rt.Create(ctx, *inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if ref.InstanceID != inst.ID || ref.Node == "" {
		t.Fatalf("create returned %+v", ref)
	}
	if err := rt.Start(ctx, ref); err != nil {
		t.Fatalf("start: %v", err)
	}
	return ref
}

// waitFor watches the runtime until an event of inst matching ok arrives.
// The watch must have been opened before the change it waits for.
func waitFor(t *testing.T, ctx context.Context, events <-chan runtime.Event, id string, what string, ok func(runtime.Event) bool) runtime.Event {
	t.Helper()
	for {
		select {
		case ev, open := <-events:
			if !open {
				t.Fatalf("watch closed while waiting for %s", what)
			}
			if ev.InstanceID == id && ok(ev) {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %s event for %s: %v", what, id, ctx.Err())
		}
	}
}

func kindIs(k runtime.EventKind) func(runtime.Event) bool {
	return func(ev runtime.Event) bool { return ev.Kind == k }
}

func watch(t *testing.T, ctx context.Context, rt runtime.Runtime) <-chan runtime.Event {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	events, err := rt.Watch(wctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	return events
}

func testCreateRuns(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Running(t)
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	st, err := rt.Inspect(ctx, ref)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if st.Phase != runtime.PhaseRunning || st.StartedAt == nil || st.ExitCode != nil || st.InstanceID != inst.ID {
		t.Errorf("running container: %+v", st)
	}
	if st.Labels[runtime.LabelManaged] != "true" || st.Labels[runtime.LabelInstanceID] != inst.ID {
		t.Errorf("labels = %v", st.Labels)
	}
	if err := rt.Start(ctx, ref); err != nil {
		t.Errorf("start of a running container: %v", err)
	}
}

func testCreateIdempotent(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	inst := h.Running(t)
	// A retry that never learnt the first attempt's node adopts its object.
	first, err := rt.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	again, err := rt.Create(ctx, inst)
	if err != nil {
		t.Fatalf("second create: %v", err)
	}
	if again.RuntimeID != first.RuntimeID {
		t.Errorf("second create made another object: %+v vs %+v", again, first)
	}
	inst.RuntimeNodeName = first.Node
	if _, err := rt.Create(ctx, inst); err != nil {
		t.Fatalf("create on the recorded node: %v", err)
	}
	all, err := rt.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	n := 0
	for _, s := range all {
		if s.InstanceID == inst.ID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("list has %d objects of the instance, want 1", n)
	}
}

func testStopThenStart(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Running(t)
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	if err := rt.Stop(ctx, ref, 2*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	st, err := rt.Inspect(ctx, ref)
	switch {
	case runtime.IsNotFound(err): // Kubernetes: a stopped instance has no Pod
	case err != nil:
		t.Fatalf("inspect after stop: %v", err)
	case st.Phase.Active():
		t.Errorf("after stop the container is %s", st.Phase)
	}
	if err := rt.Stop(ctx, ref, time.Second); err != nil && !runtime.IsNotFound(err) {
		t.Errorf("second stop: %v", err)
	}
	// Start as the worker does it: a missing object is made again from the spec.
	err = rt.Start(ctx, ref)
	if runtime.IsNotFound(err) {
		if ref, err = rt.Create(ctx, inst); err == nil {
			err = rt.Start(ctx, ref)
		}
	}
	if err != nil {
		t.Fatalf("start after stop: %v", err)
	}
	waitFor(t, ctx, events, inst.ID, "started again", func(ev runtime.Event) bool {
		return ev.Kind == runtime.EventStarted
	})
	if st, err := rt.Inspect(ctx, ref); err != nil || st.Phase != runtime.PhaseRunning {
		t.Errorf("after start: %+v, %v", st, err)
	}
}

func testDelete(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Running(t)
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	if err := rt.Delete(ctx, ref); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitFor(t, ctx, events, inst.ID, "destroyed", kindIs(runtime.EventDestroyed))
	if _, err := rt.Inspect(ctx, ref); !runtime.IsNotFound(err) {
		t.Errorf("inspect after delete: err = %v, want not found", err)
	}
	if err := rt.Delete(ctx, ref); err != nil {
		t.Errorf("second delete: %v", err)
	}
	// A ref without a node (never recorded) is looked up everywhere.
	if err := rt.Delete(ctx, runtime.Ref{InstanceID: inst.ID}); err != nil {
		t.Errorf("delete without a node: %v", err)
	}
}

func testExitCodes(t *testing.T, h Harness) {
	for _, code := range []int{0, 3} {
		t.Run("code", func(t *testing.T) {
			ctx := testenv.Context(t, h.Timeout)
			rt := h.Runtime
			events := watch(t, ctx, rt)
			inst := h.Exiting(t, code)
			ref := createStarted(t, ctx, rt, &inst)
			ev := waitFor(t, ctx, events, inst.ID, "exited", kindIs(runtime.EventExited))
			if ev.ExitCode == nil || *ev.ExitCode != code {
				t.Errorf("exit event code = %v, want %d", ptrStr(ev.ExitCode), code)
			}
			st, err := rt.Inspect(ctx, ref)
			if err != nil {
				t.Fatalf("inspect: %v", err)
			}
			if st.Phase != runtime.PhaseExited || st.ExitCode == nil || *st.ExitCode != code || st.OOMKilled {
				t.Errorf("after exit %d: phase %s, code %s, oom %v", code, st.Phase, ptrStr(st.ExitCode), st.OOMKilled)
			}
			// Stopping what already ended leaves it (and its exit code) alone.
			if err := rt.Stop(ctx, ref, time.Second); err != nil {
				t.Errorf("stop of an ended container: %v", err)
			}
		})
	}
}

func testWatch(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Exiting(t, 7)
	ref := createStarted(t, ctx, rt, &inst)
	started := waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	if started.Node == "" || started.Time.IsZero() {
		t.Errorf("started event: %+v", started)
	}
	waitFor(t, ctx, events, inst.ID, "exited 7", func(ev runtime.Event) bool {
		return ev.Kind == runtime.EventExited && ev.ExitCode != nil && *ev.ExitCode == 7
	})
	if err := rt.Delete(ctx, ref); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitFor(t, ctx, events, inst.ID, "destroyed", kindIs(runtime.EventDestroyed))
}

func testMissing(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	ref := runtime.Ref{InstanceID: container.NewID()}
	if err := rt.Start(ctx, ref); !runtime.IsNotFound(err) {
		t.Errorf("start: %v, want not found", err)
	}
	if err := rt.Stop(ctx, ref, 0); !runtime.IsNotFound(err) {
		t.Errorf("stop: %v, want not found", err)
	}
	if _, err := rt.Inspect(ctx, ref); !runtime.IsNotFound(err) {
		t.Errorf("inspect: %v, want not found", err)
	}
	if err := rt.Delete(ctx, ref); err != nil {
		t.Errorf("delete: %v, want success", err)
	}
	if err := rt.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}
	var re *runtime.Error
	if err := rt.Start(ctx, ref); !errors.As(err, &re) || re.Op != "start" {
		t.Errorf("start error %v is not a *runtime.Error naming its operation", err)
	}
}

func testListScope(t *testing.T, h, other Harness) {
	if other.Timeout == 0 {
		other.Timeout = 90 * time.Second
	}
	ctx := testenv.Context(t, other.Timeout)
	theirs := other.Running(t)
	createStarted(t, ctx, other.Runtime, &theirs)
	inst := h.Running(t)
	ref := createStarted(t, ctx, h.Runtime, &inst)
	all, err := h.Runtime.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var mine *runtime.State
	for i := range all {
		if all[i].InstanceID == theirs.ID {
			t.Errorf("list has another scope's container: %+v", all[i])
		}
		if all[i].InstanceID == inst.ID {
			mine = &all[i]
		}
	}
	if mine == nil || mine.Node == "" || mine.Name == "" {
		t.Fatalf("list does not have the created container properly: %+v", mine)
	}
	if !strings.HasPrefix(mine.Node, ref.Node) {
		t.Errorf("list node %q, create said %q", mine.Node, ref.Node)
	}
}

func ptrStr(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return strconv.Itoa(*p)
}
