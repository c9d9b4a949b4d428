package emulate_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
)

// kubeImage is never pulled: the test cluster's kwok node runs nothing.
const kubeImage = "registry.invalid/berth/test:1"

// kubeRuntime is the test's own view of the cluster's Pods in scope; it
// deletes what is left of them when the test ends.
func kubeRuntime(t testing.TB, scope, kubeconfig, namespace string) *kubernetes.Runtime {
	t.Helper()
	kube, err := kubernetes.New(config.Kubernetes{Clusters: []config.KubernetesCluster{{Name: "k1", Kubeconfig: kubeconfig, Namespace: namespace}}},
		kubernetes.Options{Scope: scope, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, _ := kube.List(ctx)
		for _, s := range states {
			_ = kube.Delete(ctx, s.Ref)
		}
	})
	return kube
}

// pods returns the stack's Pods of instance id.
func (st *stack) pods(id string) []runtime.State {
	st.t.Helper()
	states, err := st.kube.List(context.Background())
	if err != nil {
		st.t.Fatal(err)
	}
	var out []runtime.State
	for _, s := range states {
		if s.Labels[runtime.LabelInstanceID] == id {
			out = append(out, s)
		}
	}
	return out
}

// TestKubernetesOnlyLifecycle runs a Kubernetes-only deployment (no Docker
// host, allowed_runtimes [kubernetes]) under the emulator, every step through
// the Lambda functions against the project's Kubernetes control plane: the
// start-up seeding skips the Docker template it cannot run and says why,
// then create → running (a Pod) → stop (Pod gone) → start (a new Pod) →
// delete (gone), and a Pod no node can take fails its instance with the
// reason once create_start_timeout passes.
func TestKubernetesOnlyLifecycle(t *testing.T) {
	t.Parallel()
	st := start(t, setup{
		kubernetesOnly: true,
		templates:      "../../testdata/templates",
		container: map[string]any{
			"allowed_runtimes": []string{"kubernetes"},
			// The template's smallest choice (CreateStartTimeoutSeconds).
			"create_start_timeout": "60s",
		},
		scheduleEvery: 2 * time.Second,
	})
	if logs := st.logs.String(); !strings.Contains(logs, "template skipped") || !strings.Contains(logs, `"template":"busybox"`) {
		t.Errorf("the seeding did not say it skipped the Docker template busybox:\n%s", tail(logs, 4000))
	}
	for name, sched := range map[string]map[string]any{
		"k-sleeper": nil,
		"k-nowhere": {"node_selector": map[string]string{"berth.test/no-such-node": "true"}},
	} {
		tpl := map[string]any{"runtime": "kubernetes", "image": kubeImage, "command": []string{"sleep", "infinity"}}
		if sched != nil {
			tpl["scheduling"] = sched
		}
		if r := st.do(http.MethodPut, "/api/templates/"+name, adminToken, tpl); r.status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", name, r.status, r.body)
		}
	}
	if r := st.do(http.MethodPut, "/api/templates/d", adminToken, map[string]any{"runtime": "docker", "image": kubeImage}); r.status != http.StatusUnprocessableEntity {
		t.Errorf("a Docker template on a Kubernetes-only deployment: %d %s", r.status, r.body)
	}
	nowhere := st.create(aliceToken, "k-nowhere", "nowhere")

	id := st.create(aliceToken, "k-sleeper", "life")
	running := st.wait(aliceToken, id, "running", 2*time.Minute)
	if running["runtime_node_name"] != "k1/kwok-node-0" {
		t.Errorf("runtime_node_name = %v, want k1/kwok-node-0", running["runtime_node_name"])
	}
	pods := st.pods(id)
	if len(pods) != 1 || pods[0].Phase != runtime.PhaseRunning {
		t.Fatalf("pods of the instance: %+v", pods)
	}
	first := pods[0].RuntimeID
	if r := st.do(http.MethodPost, "/api/containers/"+id+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "stopped", time.Minute)
	if pods := st.pods(id); len(pods) != 0 {
		t.Errorf("pods after stop: %+v", pods)
	}
	if r := st.do(http.MethodPost, "/api/containers/"+id+"/start", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "running", 2*time.Minute)
	if pods := st.pods(id); len(pods) != 1 || pods[0].RuntimeID == first {
		t.Errorf("pods after start: %+v (first pod %s)", pods, first)
	}
	if r := st.do(http.MethodDelete, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for deadline := time.Now().Add(time.Minute); st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil).status != http.StatusNotFound; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still there a minute after the delete")
		}
	}
	if pods := st.pods(id); len(pods) != 0 {
		t.Errorf("pods after delete: %+v", pods)
	}

	failed := st.wait(aliceToken, nowhere, "failed", 3*time.Minute)
	if reason, _ := failed["status_reason"].(string); !strings.Contains(reason, "Unschedulable") {
		t.Errorf("status_reason = %q, want Unschedulable", reason)
	}
	for _, fn := range []string{"ApiFunction", "DispatcherFunction", "CreateWorkerFunction", "LifecycleWorkerFunction"} {
		if len(st.functionPIDs(fn)) == 0 {
			t.Errorf("%s never started under the RIE", fn)
		}
	}
}
