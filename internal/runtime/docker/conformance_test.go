package docker_test

import (
	"fmt"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
)

// TestConformance runs the Runtime contract's shared cases against real
// Docker engines (the Kubernetes runtime runs the same cases).
func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Harness {
		e := newEngine(t)
		return runtimetest.Harness{
			Runtime: e.Runtime,
			Running: func(*testing.T) container.Instance { return e.instance(politeSleeper) },
			Exiting: func(_ *testing.T, code int) container.Instance {
				return e.instance(fmt.Sprintf("sleep 0.3; exit %d", code))
			},
		}
	})
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
