package kubernetes_test

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/runtime/runtimetest"
)

// TestConformance runs the Runtime contract's shared cases against a real
// kube-apiserver with a kwok node, as a user holding only berth's Role.
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
