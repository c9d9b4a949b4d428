package runtimetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// EndpointPorts are the ports RunEndpoints publishes: one per protocol a
// runtime is most asked for.
var EndpointPorts = []container.Port{{ContainerPort: 8080, Protocol: "tcp"}, {ContainerPort: 5353, Protocol: "udp"}}

// RunEndpoints runs the endpoint cases: a running container's State (from
// Inspect and List alike) names one endpoint per published port, and none
// once it stops or when it publishes nothing. h.Running's instances get
// EndpointPorts; the runtime must be configured to publish them (a Docker
// host whose network mode publishes ports). advertised, when not empty,
// is the host every endpoint must name (a Docker host's advertised
// address; a Pod's IP is not known in advance).
func RunEndpoints(t *testing.T, advertised string, newHarness func(t *testing.T) Harness) {
	t.Run("WhileRunning", func(t *testing.T) {
		t.Parallel()
		testEndpointsWhileRunning(t, newHarness(t), advertised)
	})
	t.Run("NoPortsNoEndpoints", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		if h.Timeout == 0 {
			h.Timeout = 90 * time.Second
		}
		ctx := testenv.Context(t, h.Timeout)
		events := watch(t, ctx, h.Runtime)
		inst := h.Running(t)
		inst.Spec.Ports = nil
		ref := createStarted(t, ctx, h.Runtime, &inst)
		waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
		if st := inspectRunning(t, ctx, h.Runtime, ref); len(st.Endpoints) != 0 {
			t.Errorf("a container publishing nothing has endpoints: %+v", st.Endpoints)
		}
	})
}

func testEndpointsWhileRunning(t *testing.T, h Harness, advertised string) {
	if h.Timeout == 0 {
		h.Timeout = 90 * time.Second
	}
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	inst := h.Running(t)
	inst.Spec.Ports = EndpointPorts
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	st := inspectRunning(t, ctx, rt, ref)
	if len(st.Endpoints) != len(EndpointPorts) {
		t.Fatalf("endpoints of a container publishing %d ports: %+v", len(EndpointPorts), st.Endpoints)
	}
	// Ordered by port: 5353/udp, then 8080/tcp.
	for i, want := range []container.Port{EndpointPorts[1], EndpointPorts[0]} {
		ep := st.Endpoints[i]
		if ep.Port != want.ContainerPort || ep.Protocol != want.Protocol || ep.Host == "" || ep.HostPort < 1 || ep.HostPort > 65535 || ep.Via == "" {
			t.Errorf("endpoint %d: %+v, want port %d/%s at some host and port", i, ep, want.ContainerPort, want.Protocol)
		}
		if advertised != "" && ep.Host != advertised {
			t.Errorf("endpoint %d names host %q, want the advertised %q", i, ep.Host, advertised)
		}
	}
	if l := listed(t, ctx, rt, inst.ID); fmt.Sprint(l.Endpoints) != fmt.Sprint(st.Endpoints) {
		t.Errorf("List's endpoints %+v differ from Inspect's %+v", l.Endpoints, st.Endpoints)
	}
	if err := rt.Stop(ctx, ref, 2*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped, err := rt.Inspect(ctx, ref)
	switch {
	case runtime.IsNotFound(err): // Kubernetes: a stopped instance has no Pod
	case err != nil:
		t.Fatalf("inspect after stop: %v", err)
	case len(stopped.Endpoints) != 0:
		t.Errorf("a stopped container has endpoints: %+v", stopped.Endpoints)
	}
	if after := listed(t, ctx, rt, inst.ID); len(after.Endpoints) != 0 {
		t.Errorf("a stopped container is listed with endpoints: %+v", after.Endpoints)
	}
}

// inspectRunning inspects ref until it is running: the start event may
// come before the runtime reports the Pod running with its IP.
func inspectRunning(t *testing.T, ctx context.Context, rt runtime.Runtime, ref runtime.Ref) runtime.State {
	t.Helper()
	for {
		st, err := rt.Inspect(ctx, ref)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		if st.Phase == runtime.PhaseRunning {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never running: %+v", st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listed is id's State in a listing; the zero State when it is not listed.
func listed(t *testing.T, ctx context.Context, rt runtime.Runtime, id string) runtime.State {
	t.Helper()
	all, err := rt.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, s := range all {
		if s.InstanceID == id {
			return s
		}
	}
	return runtime.State{}
}
