package docker_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/testenv"
)

// The tests below run against real Docker engines (testenv: `make test`
// starts them). Each test works in a scope of its own, so the load it sees
// and the containers it cleans up are its own even when other packages use
// the same engines at the same time.

// engine is a test's runtime, scope and image.
type engine struct {
	*docker.Runtime
	scope string
	image string
}

// newEngine makes a runtime over the given hosts (default: one host "h1" on
// the first engine, network none, bind mounts allowed under a temp dir) and
// removes, at the end of the test, every container of its scope.
func newEngine(t testing.TB, hosts ...config.DockerHost) *engine {
	t.Helper()
	ep := testenv.DockerHost(t)
	image := testenv.TestImage(t)
	if len(hosts) == 0 {
		hosts = []config.DockerHost{{Name: "h1", Endpoint: ep, NetworkMode: "none"}}
	}
	scope := "test-" + strings.ToLower(container.NewID())
	rt, err := docker.New(config.Docker{Hosts: hosts}, docker.Options{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		testenv.Missing(t, "a Docker engine", err.Error())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		states, err := rt.List(ctx)
		if err != nil {
			t.Errorf("cleanup: list: %v", err)
		}
		for _, s := range states {
			if err := rt.Delete(ctx, s.Ref); err != nil {
				t.Errorf("cleanup: delete %s on %s: %v", s.Name, s.Node, err)
			}
		}
		rt.Close()
	})
	return &engine{Runtime: rt, scope: scope, image: image}
}

// instance is a new instance of the test image running script under sh.
func (e *engine) instance(script string) container.Instance {
	return container.Instance{
		ID: container.NewID(), Owner: "alice", Template: "busybox", Group: "tests",
		Labels: map[string]string{"purpose": "test"},
		Spec: container.Spec{
			Runtime: container.RuntimeDocker, Image: e.image, PullPolicy: container.PullNever,
			Command: []string{"sh", "-c", script},
			Env:     map[string]string{"SECRET_TOKEN": "do-not-log-me"},
			Labels:  map[string]string{"template-label": "yes"},
		},
	}
}

// createStart creates and starts inst, failing the test on error.
func (e *engine) createStart(t testing.TB, inst container.Instance) runtime.Ref {
	t.Helper()
	ctx := testenv.Context(t, 60*time.Second)
	ref, err := e.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := e.Start(ctx, ref); err != nil {
		t.Fatalf("start: %v", err)
	}
	return ref
}

// waitState polls Inspect until ok says the state is reached, or fails at
// the deadline with the last state seen.
func (e *engine) waitState(t testing.TB, ref runtime.Ref, what string, ok func(runtime.State) bool) runtime.State {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	var last runtime.State
	var lastErr error
	for {
		last, lastErr = e.Inspect(ctx, ref)
		if lastErr == nil && ok(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: last state %+v, err %v", what, last, lastErr)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// waitReady polls ref's container output until it has printed "ready"
// (politeSleeper's trap is set), or fails at the deadline.
func (e *engine) waitReady(t testing.TB, ref runtime.Ref) {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	for {
		logs, err := e.Client(ref.Node).ContainerLogs(ctx, ref.RuntimeID, client.ContainerLogsOptions{ShowStdout: true})
		if err == nil {
			out, rerr := io.ReadAll(logs)
			logs.Close()
			if rerr == nil && bytes.Contains(out, []byte("ready")) {
				return
			}
			err = rerr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s to print ready: %v", ref.RuntimeID, err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func phaseIs(p runtime.Phase) func(runtime.State) bool {
	return func(s runtime.State) bool { return s.Phase == p }
}

// waitEvent reads events until one for instance id satisfies ok.
func waitEvent(t testing.TB, events <-chan runtime.Event, id, what string, ok func(runtime.Event) bool) runtime.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, open := <-events:
			if !open {
				t.Fatalf("event stream closed while waiting for %s", what)
			}
			if ev.InstanceID == id && ok(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event for %s within 30s", what, id)
		}
	}
}

func kindIs(k runtime.EventKind) func(runtime.Event) bool {
	return func(ev runtime.Event) bool { return ev.Kind == k }
}

// noSecret fails when an error message carries the test env value.
func noSecret(t testing.TB, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "do-not-log-me") {
		t.Fatalf("an env value leaked into an error: %v", err)
	}
}
