package kubernetes_test

import (
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

// TestPodOnTheCluster: the Pod the API server accepted carries berth's
// labels (the owner, not a label value, as an annotation), runs on the
// simulated node, and its node is reported as "<cluster>/<node>".
func TestPodOnTheCluster(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{})
	ctx := testenv.Context(t, 60*time.Second)
	inst := k.instance()
	inst.Labels["berth.instance-id"] = "forged" // must not win over berth's
	ref, err := k.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(ref.Node, "k1") || ref.RuntimeID == "" {
		t.Fatalf("ref = %+v", ref)
	}
	st := k.waitState(t, ref, "running", func(s runtime.State) bool { return s.Phase == runtime.PhaseRunning })
	if st.Node != "k1/kwok-node-0" || st.Name != "berth-"+strings.ToLower(inst.ID) {
		t.Errorf("state %+v", st)
	}
	labels, annotations := k.pod(t, inst.ID)
	want := map[string]string{"berth.managed": "true", "berth.instance-id": inst.ID, "berth.scope": k.scope,
		"berth.template": "sleeper", "berth.group": "tests", "purpose": "test", "template-label": "yes"}
	for key, v := range want {
		if labels[key] != v {
			t.Errorf("label %s = %q, want %q", key, labels[key], v)
		}
	}
	if annotations["berth.owner"] != "alice@example.com" {
		t.Errorf("owner annotation = %q", annotations["berth.owner"])
	}
}

// TestUnschedulableSaysWhy: a Pod no node can take stays created, and
// Inspect says why, for the worker's start-timeout failure to name.
func TestUnschedulableSaysWhy(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{})
	ctx := testenv.Context(t, 60*time.Second)
	inst := k.instance()
	inst.Spec.Scheduling.NodeSelector = map[string]string{"berth.test/no-such-node": "true"}
	ref, err := k.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	st := k.waitState(t, ref, "unschedulable", func(s runtime.State) bool { return s.Error != "" })
	if st.Phase != runtime.PhaseCreated || !strings.Contains(st.Error, "Unschedulable") {
		t.Errorf("state %s %q, want created with an Unschedulable reason", st.Phase, st.Error)
	}
}

// TestInvalidPodIsInvalid: what the API server refuses outright is
// ErrInvalid (no retry), with no env value in the message.
func TestInvalidPodIsInvalid(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{})
	inst := k.instance()
	inst.Spec.Scheduling.Tolerations = []container.Toleration{{Key: "x", Operator: "Sometimes"}}
	_, err := k.Create(testenv.Context(t, 30*time.Second), inst)
	if !runtime.IsInvalid(err) {
		t.Fatalf("create: %v, want invalid", err)
	}
	if strings.Contains(err.Error(), "do-not-log-me") {
		t.Errorf("env value in the error: %v", err)
	}
}

// TestPullSecret: registry credentials become the berth-registries Secret
// in the namespace, named by the Pod, and the Secret never shows in errors.
func TestPullSecret(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{Registries: []config.Registry{
		{Host: "ghcr.io", Username: "bot", Password: "pull-secret-value"},
		{Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com"},
	}})
	ctx := testenv.Context(t, 30*time.Second)
	inst := k.instance()
	if _, err := k.Create(ctx, inst); err != nil {
		t.Fatalf("create: %v", err)
	}
	cs, ns, err := k.Clientset(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, "berth-"+strings.ToLower(inst.ID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != kubernetes.PullSecretName {
		t.Errorf("imagePullSecrets = %v", pod.Spec.ImagePullSecrets)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, kubernetes.PullSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body := string(sec.Data[".dockerconfigjson"])
	if !strings.Contains(body, "ghcr.io") || !strings.Contains(body, "pull-secret-value") || strings.Contains(body, "dkr.ecr") {
		t.Errorf("secret content has the wrong registries (%d bytes)", len(body))
	}
}

// TestCapacityAcrossClusters: placement fills the least-loaded cluster with
// room and refuses (unavailable) when every matching cluster is full; a
// template's host_labels pick clusters by their labels.
func TestCapacityAcrossClusters(t *testing.T) {
	t.Parallel()
	kc, ns := testenv.Kubeconfig(t), testenv.KubeNamespace(t)
	// Two configured clusters on the one test API server, told apart by berth
	// only through their names (the scope keeps the load count per test).
	k := newKube(t, kubernetes.Options{},
		config.KubernetesCluster{Name: "small", Kubeconfig: kc, Namespace: ns, Capacity: 1, Labels: map[string]string{"tier": "a"}},
		config.KubernetesCluster{Name: "other", Kubeconfig: kc, Namespace: ns, Capacity: 1, Labels: map[string]string{"tier": "b"}},
	)
	ctx := testenv.Context(t, 60*time.Second)
	inst := k.instance()
	inst.Spec.Scheduling.HostLabels = map[string]string{"tier": "a"}
	node, err := k.Place(ctx, inst)
	if err != nil || node != "small" {
		t.Fatalf("place = %q, %v; want small", node, err)
	}
	inst.RuntimeNodeName = node
	if _, err := k.Create(ctx, inst); err != nil {
		t.Fatalf("create: %v", err)
	}
	next := k.instance()
	next.Spec.Scheduling.HostLabels = map[string]string{"tier": "a"}
	// Both "clusters" see the same Pods here, so one Pod fills both.
	if _, err := k.Place(ctx, next); !runtime.IsUnavailable(err) {
		t.Errorf("place on a full cluster: %v, want unavailable", err)
	}
	next.Spec.Scheduling.HostLabels = map[string]string{"tier": "c"}
	if _, err := k.Place(ctx, next); !runtime.IsInvalid(err) {
		t.Errorf("place with labels no cluster has: %v, want invalid", err)
	}
	// The instance's own Pod is found (adopted), full or not.
	again := inst
	again.RuntimeNodeName = ""
	if node, err := k.Place(ctx, again); err != nil || !strings.HasPrefix(node, "small") {
		t.Errorf("place of the instance with a Pod = %q, %v", node, err)
	}
}
