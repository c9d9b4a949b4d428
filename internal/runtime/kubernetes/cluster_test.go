package kubernetes_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// The labels berth's kwok stages (scripts/testenv/kwok) act on: a running
// Pod with an exit code label ends with that code after the exit-after duration.
const (
	labelExitCode  = "test.berth.dev/exit-code"
	labelExitAfter = "test.berth.dev/exit-after"
)

// testImage is never pulled: kwok's nodes run nothing.
const testImage = "registry.invalid/berth/test:1"

// kube is a test's runtime over the test cluster (scripts/testenv/kubernetes.sh,
// as the user holding only berth's namespaced Role), in a scope of its own.
type kube struct {
	*kubernetes.Runtime
	scope     string
	namespace string
}

// newKube makes a runtime on the test cluster, named "k1", and deletes every
// Pod of its scope at the end of the test.
func newKube(t testing.TB, opts kubernetes.Options, clusters ...config.KubernetesCluster) *kube {
	t.Helper()
	kc := testenv.Kubeconfig(t)
	ns := testenv.KubeNamespace(t)
	if len(clusters) == 0 {
		clusters = []config.KubernetesCluster{{Name: "k1", Kubeconfig: kc, Namespace: ns}}
	}
	scope := "test-" + strings.ToLower(container.NewID())
	opts.Scope = scope
	rt, err := kubernetes.New(config.Kubernetes{Clusters: clusters}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		testenv.Missing(t, "a Kubernetes API server", err.Error())
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
				t.Errorf("cleanup: delete %s: %v", s.Name, err)
			}
		}
	})
	return &kube{Runtime: rt, scope: scope, namespace: ns}
}

// instance is a new instance whose Pod runs until it is deleted.
func (k *kube) instance() container.Instance {
	return container.Instance{
		ID: container.NewID(), Owner: "alice@example.com", Template: "sleeper", Group: "tests",
		Runtime: container.RuntimeKubernetes,
		Labels:  map[string]string{"purpose": "test"},
		Spec: container.Spec{
			Runtime: container.RuntimeKubernetes, Image: testImage, PullPolicy: container.PullIfNotPresent,
			Command: []string{"sleep", "infinity"},
			Env:     map[string]string{"SECRET_TOKEN": "do-not-log-me"},
			Labels:  map[string]string{"template-label": "yes"},
		},
	}
}

// exiting is a new instance whose Pod ends with code soon after it runs.
func (k *kube) exiting(code int) container.Instance {
	inst := k.instance()
	inst.Spec.Labels[labelExitCode] = strconv.Itoa(code)
	inst.Spec.Labels[labelExitAfter] = "300ms"
	return inst
}

// waitState polls Inspect until ok, or fails with the last state seen.
func (k *kube) waitState(t testing.TB, ref runtime.Ref, what string, ok func(runtime.State) bool) runtime.State {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	var last runtime.State
	var lastErr error
	for {
		last, lastErr = k.Inspect(ctx, ref)
		if lastErr == nil && ok(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: last state %+v, err %v", what, last, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pod reads an instance's Pod as the test user.
func (k *kube) pod(t testing.TB, id string) (labels, annotations map[string]string) {
	t.Helper()
	cs, ns, err := k.Clientset(context.Background(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(ns).Get(testenv.Context(t, 10*time.Second), "berth-"+strings.ToLower(id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	return p.Labels, p.Annotations
}
