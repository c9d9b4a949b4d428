package docker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
)

// simImage is the image the simulated fleet's instances run: absent at
// first, so the first create on each host pulls it through the simulation.
const simImage = "berth.test/sim:1"

// simEngine is a runtime over a fleet of hosts simulated hosts,
// in a scope of its own; the fleet closes at the end of the test.
func simEngine(t *testing.T, hosts int, template config.DockerHost) *docker.Runtime {
	t.Helper()
	fleet, err := dockersim.New(dockersim.Options{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	rt, err := docker.New(config.Docker{Hosts: fleet.DockerHosts(template)},
		docker.Options{Scope: "test-" + strings.ToLower(container.NewID())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		t.Fatalf("ping the simulated fleet: %v", err)
	}
	return rt
}

// simInstance is a new instance for the simulated fleet: it runs until
// stopped, or with exit set, for runFor and then exits with *exit.
func simInstance(runFor time.Duration, exit *int) container.Instance {
	inst := container.Instance{
		ID: container.NewID(), Owner: "alice", Template: "sim", Group: "tests",
		Labels: map[string]string{"purpose": "test"},
		Spec: container.Spec{
			Runtime: container.RuntimeDocker, Image: simImage, Command: []string{"sleep", "infinity"},
			Env:    map[string]string{"SECRET_TOKEN": "do-not-log-me"},
			Labels: map[string]string{"template-label": "yes"},
		},
	}
	if exit != nil {
		inst.Spec.Env[dockersim.EnvRunFor] = runFor.String()
		inst.Spec.Env[dockersim.EnvExitCode] = strconv.Itoa(*exit)
	}
	return inst
}

// TestSimConformance runs the Runtime contract's shared cases (those
// TestConformance runs on a real engine) against a docker.Runtime over
// three simulated hosts, so the load model cannot drift from what berth
// relies on. Declared not served, as the simulation runs no processes:
// exec (ExecServed false: an exec is refused naming the operation), and
// RunLogs, whose cases read what a container printed (the case that needs
// no output, the logs of a container gone, runs here).
func TestSimConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Harness {
		root := t.TempDir()
		rt := simEngine(t, 3, config.DockerHost{NetworkMode: "none", AllowedBindRoots: []string{root}})
		return runtimetest.Harness{
			Runtime: rt,
			Running: func(*testing.T) container.Instance { return simInstance(0, nil) },
			Exiting: func(_ *testing.T, code int) container.Instance {
				return simInstance(300*time.Millisecond, &code)
			},
			BindRoot:    root,
			At:          engineAt,
			StatsServed: true,
			ExecServed:  false,
		}
	})
}

// TestSimEndpointsConformance runs the endpoint cases on simulated hosts
// that publish ports (at host ports the simulation hands out; nothing
// listens there).
func TestSimEndpointsConformance(t *testing.T) {
	runtimetest.RunEndpoints(t, "127.0.0.1", func(t *testing.T) runtimetest.Harness {
		rt := simEngine(t, 2, config.DockerHost{NetworkMode: "bridge", AdvertiseAddress: "127.0.0.1"})
		return runtimetest.Harness{
			Runtime: rt,
			Running: func(*testing.T) container.Instance { return simInstance(0, nil) },
		}
	})
}
