package docker_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
	"github.com/berth-io/berth/internal/testenv"
)

// publishingEngine is newEngine over one host whose network publishes
// ports on 127.0.0.1, advertised as such.
func publishingEngine(t *testing.T) *engine {
	ep := testenv.DockerHost(t)
	return newEngine(t, config.DockerHost{Name: "h1", Endpoint: ep, NetworkMode: dockertest.PublishingNetwork(t, ep),
		AdvertiseAddress: "127.0.0.1"})
}

// TestEndpointsConformance runs the endpoint cases on a real engine: the
// host ports it chose, at the host's advertised address.
func TestEndpointsConformance(t *testing.T) {
	runtimetest.RunEndpoints(t, "127.0.0.1", func(t *testing.T) runtimetest.Harness {
		e := publishingEngine(t)
		return runtimetest.Harness{
			Runtime: e.Runtime,
			Running: func(*testing.T) container.Instance { return e.instance(politeSleeper) },
		}
	})
}

// TestEndpointAnswers: the endpoint a running container's state names is
// where it answers (over loopback).
func TestEndpointAnswers(t *testing.T) {
	t.Parallel()
	e := publishingEngine(t)
	inst := e.instance(`echo hello-from-berth | nc -l -p 8080`)
	inst.Spec.Ports = []container.Port{{ContainerPort: 8080, Protocol: "tcp"}}
	ref := e.createStart(t, inst)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := e.Inspect(ctx, ref)
	if err != nil || len(st.Endpoints) != 1 {
		t.Fatalf("endpoints: %+v, %v", st.Endpoints, err)
	}
	ep := st.Endpoints[0]
	if ep.Host != "127.0.0.1" || ep.Port != 8080 || ep.Via != container.EndpointViaHost {
		t.Fatalf("endpoint: %+v", ep)
	}
	// nc may not listen yet when the container is seen running: the
	// proxy in front of it then closes at once, and we dial again.
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ep.Address())
		if err != nil {
			t.Fatalf("dial %s: %v", ep.Address(), err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(conn)
		conn.Close()
		if string(got) == "hello-from-berth\n" {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no answer at %s (last read %q)", ep.Address(), got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
