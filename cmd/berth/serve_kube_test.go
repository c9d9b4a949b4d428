package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// kubeImage is never pulled: the test cluster's kwok node runs nothing.
const kubeImage = "registry.invalid/berth/test:1"

// putKubeTemplates adds templates of runtime kubernetes: a Pod that runs
// until stopped, Pods that berth's kwok stages end with exit 0 and 3, and a
// Pod no node can take.
func (e *serveEnv) putKubeTemplates() {
	e.t.Helper()
	exit := func(code string) map[string]string {
		return map[string]string{"test.berth.dev/exit-code": code, "test.berth.dev/exit-after": "300ms"}
	}
	for name, tpl := range map[string]container.Template{
		"k-sleeper": {},
		"k-ok":      {Labels: exit("0")},
		"k-bad":     {Labels: exit("3")},
		"k-nowhere": {Scheduling: container.Scheduling{NodeSelector: map[string]string{"berth.test/no-such-node": "true"}}},
	} {
		tpl.Runtime, tpl.Image, tpl.Command = container.RuntimeKubernetes, kubeImage, []string{"sleep", "infinity"}
		e.must(e.call("PUT", "/api/templates/"+name, adminToken, tpl), http.StatusCreated)
	}
}

// pods returns the test cluster's berth Pods of this test's scope, by
// instance id.
func (e *serveEnv) pods() map[string][]runtime.State {
	e.t.Helper()
	states, err := e.kube.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]runtime.State{}
	for _, s := range states {
		out[s.Labels[runtime.LabelInstanceID]] = append(out[s.Labels[runtime.LabelInstanceID]], s)
	}
	return out
}

// TestServeKubernetesLifecycle: through `berth serve` with a cluster
// configured, create → running (a Pod labelled with the instance id) →
// stop (Pod gone, stopped) → start (a new Pod) → delete (Pod gone, 404).
func TestServeKubernetesLifecycle(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{kubernetes: true})
	e.start()
	e.putKubeTemplates()

	in := e.create("k-sleeper")
	running := e.waitFor(in.ID, fsm.Running, time.Minute)
	if running.RuntimeNodeName != "k1/kwok-node-0" {
		t.Errorf("runtime_node_name = %q, want k1/kwok-node-0", running.RuntimeNodeName)
	}
	pods := e.pods()[in.ID]
	if len(pods) != 1 || pods[0].Phase != runtime.PhaseRunning || pods[0].Name != "berth-"+strings.ToLower(in.ID) {
		t.Fatalf("pods of the instance: %+v", pods)
	}
	firstUID := pods[0].RuntimeID

	e.must(e.call("POST", "/api/containers/"+in.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	stopped := e.waitFor(in.ID, fsm.Stopped, time.Minute)
	if stopped.StatusReason != "stopped on request" {
		t.Errorf("status_reason after stop = %q", stopped.StatusReason)
	}
	if pods := e.pods()[in.ID]; len(pods) != 0 {
		t.Fatalf("pods after stop: %+v", pods)
	}

	e.must(e.call("POST", "/api/containers/"+in.ID+"/start", aliceToken, nil), http.StatusAccepted)
	e.waitFor(in.ID, fsm.Running, time.Minute)
	pods = e.pods()[in.ID]
	if len(pods) != 1 || pods[0].RuntimeID == firstUID {
		t.Fatalf("pods after start: %+v (first pod %s)", pods, firstUID)
	}

	e.must(e.call("DELETE", "/api/containers/"+in.ID, aliceToken, nil), http.StatusAccepted)
	deadline := time.Now().Add(time.Minute)
	for e.call("GET", "/api/containers/"+in.ID, aliceToken, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("instance not gone a minute after delete:\n%s", tail(e.logs.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pods := e.pods()[in.ID]; len(pods) != 0 {
		t.Fatalf("pods after delete: %+v", pods)
	}
	e.stop()
}

// TestServeKubernetesFailures: a Pod no node takes fails its instance with
// the reason once create_start_timeout passes (and is removed); Pods that
// end by themselves leave the exit code.
func TestServeKubernetesFailures(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{kubernetes: true, createStartTimeout: 4 * time.Second})
	e.start()
	e.putKubeTemplates()

	nowhere := e.create("k-nowhere")
	ok := e.create("k-ok")
	bad := e.create("k-bad")

	failed := e.waitFor(nowhere.ID, fsm.Failed, time.Minute)
	if !strings.Contains(failed.StatusReason, "Unschedulable") || !strings.Contains(failed.StatusReason, "start timeout") {
		t.Errorf("status_reason = %q, want the start timeout and Unschedulable", failed.StatusReason)
	}
	// The worker stops (deletes) the Pod right after recording the failure.
	for deadline := time.Now().Add(30 * time.Second); len(e.pods()[nowhere.ID]) != 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the unschedulable Pod is still there 30 s after its instance failed: %+v", e.pods()[nowhere.ID])
		}
	}

	done := e.waitFor(ok.ID, fsm.Stopped, time.Minute)
	if done.ExitCode == nil || *done.ExitCode != 0 {
		t.Errorf("exit 0: instance %+v", done)
	}
	failed = e.waitFor(bad.ID, fsm.Failed, time.Minute)
	if failed.ExitCode == nil || *failed.ExitCode != 3 || !strings.Contains(failed.StatusReason, "3") {
		t.Errorf("exit 3: exit code %v, status_reason %q", failed.ExitCode, failed.StatusReason)
	}
	e.stop()
}

// TestServeKubernetesCrash: kill -9 of berth while creates are in flight,
// start again: every instance runs with exactly one Pod, and no Pod is
// left without an instance.
func TestServeKubernetesCrash(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{kubernetes: true})
	e.start()
	e.putKubeTemplates()
	var ids []string
	for _, delay := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond} {
		ids = append(ids, e.create("k-sleeper").ID)
		time.Sleep(delay) // where in the create the kill lands
		e.kill()
		e.start()
	}
	for _, id := range ids {
		e.waitFor(id, fsm.Running, 2*time.Minute)
	}
	pods := e.pods()
	for _, id := range ids {
		if len(pods[id]) != 1 {
			t.Errorf("instance %s has %d pods, want 1", id, len(pods[id]))
		}
	}
	if len(pods) != len(ids) {
		t.Errorf("%d instances with pods for %d instances: an orphan", len(pods), len(ids))
	}
	e.stop()
}
