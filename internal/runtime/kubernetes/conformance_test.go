package kubernetes_test

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
)

// TestConformance runs the Runtime contract's shared cases against a real
// kube-apiserver with a kwok node, as a user holding only berth's Role.
// runtimetest.RunLogs is not run here: kwok simulates Pods without
// processes, so nothing a test asks a container to print exists (kwok's
// log endpoint serves a file fixed in its configuration); the Kubernetes
// side of reading logs is TestReadTimestamped over the kubelet's form,
// and the case that needs no output (a container already gone) runs here.
func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Harness {
		k := newKube(t, kubernetes.Options{})
		return runtimetest.Harness{
			Runtime: k.Runtime,
			Running: func(*testing.T) container.Instance { return k.instance() },
			Exiting: func(_ *testing.T, code int) container.Instance { return k.exiting(code) },
		}
	})
}

// TestEndpointsConformance runs the endpoint cases on the test cluster:
// kwok gives a running Pod an IP, and its endpoints are that IP and the
// container ports (berth makes no Service).
func TestEndpointsConformance(t *testing.T) {
	runtimetest.RunEndpoints(t, "", func(t *testing.T) runtimetest.Harness {
		k := newKube(t, kubernetes.Options{})
		return runtimetest.Harness{
			Runtime: k.Runtime,
			Running: func(*testing.T) container.Instance { return k.instance() },
		}
	})
}
