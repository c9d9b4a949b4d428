package docker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
	"github.com/berth-io/berth/internal/testenv"
)

// TestConformance runs the Runtime contract's shared cases against real
// Docker engines (the Kubernetes runtime runs the same cases).
func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Harness {
		root := t.TempDir()
		e := newEngine(t, config.DockerHost{Name: "h1", Endpoint: testenv.DockerHost(t), NetworkMode: "none",
			AllowedBindRoots: []string{root}})
		return runtimetest.Harness{
			Runtime: e.Runtime,
			Running: func(*testing.T) container.Instance { return e.instance(politeSleeper) },
			Exiting: func(_ *testing.T, code int) container.Instance {
				return e.instance(fmt.Sprintf("sleep 0.3; exit %d", code))
			},
			BindRoot:    root,
			At:          engineAt,
			StatsServed: true,
			ExecServed:  true,
		}
	})
}

// engineAt is a runtime of one host, runtimetest.AtNode, whose engine is
// reached at endpoint (http://127.0.0.1:port) over plain TCP.
func engineAt(t *testing.T, endpoint string) runtime.Runtime {
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: runtimetest.AtNode,
		Endpoint: "tcp://" + strings.TrimPrefix(endpoint, "http://"), NetworkMode: "none"}}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// TestLogsConformance runs the LogReader contract's cases that read what a
// container printed.
func TestLogsConformance(t *testing.T) {
	runtimetest.RunLogs(t, func(t *testing.T) runtimetest.Harness {
		e := newEngine(t)
		return runtimetest.Harness{
			Runtime:  e.Runtime,
			Printing: func(_ *testing.T, script string) container.Instance { return e.instance(script) },
		}
	})
}
