package kubernetes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"

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
	const root = "/srv/berth-conformance"
	runtimetest.Run(t, func(t *testing.T) runtimetest.Harness {
		k := newKube(t, kubernetes.Options{}, config.KubernetesCluster{Name: "k1", Kubeconfig: testenv.Kubeconfig(t),
			Namespace: testenv.KubeNamespace(t), AllowedHostPathRoots: []string{root}})
		return runtimetest.Harness{
			Runtime:  k.Runtime,
			Running:  func(*testing.T) container.Instance { return k.instance() },
			Exiting:  func(_ *testing.T, code int) container.Instance { return k.exiting(code) },
			BindRoot: root,
			At:       clusterAt,
		}
	})
}

// clusterAt is a runtime of one cluster, runtimetest.AtNode, whose API
// server is reached at endpoint (http://127.0.0.1:port) without
// credentials.
func clusterAt(t *testing.T, endpoint string) runtime.Runtime {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, endpoint)
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := kubernetes.New(config.Kubernetes{Clusters: []config.KubernetesCluster{{Name: runtimetest.AtNode,
		Kubeconfig: kc, Namespace: "berth"}}}, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
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
