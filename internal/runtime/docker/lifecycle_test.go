package docker_test

import (
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// A container that stops politely on SIGTERM (exit 0), whatever PID 1 would
// otherwise do with the signal. It prints "ready" once its trap is set:
// before that, as PID 1 without a handler, it ignores SIGTERM, and a stop
// sent that early (a loaded machine) waits out the grace period and kills
// it (exit 137). waitReady waits for the line.
const politeSleeper = `trap "exit 0" TERM; echo ready; while true; do sleep 0.1; done`

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 90*time.Second)
	inst := e.instance(politeSleeper)
	inst.Labels["berth.instance-id"] = "forged" // must not win over berth's

	ref, err := e.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if ref.Node != "h1" || ref.RuntimeID == "" || ref.InstanceID != inst.ID {
		t.Fatalf("ref = %+v", ref)
	}

	st, err := e.Inspect(ctx, ref)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if st.Phase != runtime.PhaseCreated || st.Name != "berth-"+inst.ID || st.InstanceID != inst.ID || st.StartedAt != nil {
		t.Errorf("after create: %+v", st)
	}
	wantLabels := map[string]string{
		"berth.managed": "true", "berth.instance-id": inst.ID, "berth.owner": "alice",
		"berth.template": "busybox", "berth.group": "tests", "berth.scope": e.scope,
		"purpose": "test", "template-label": "yes",
	}
	for k, v := range wantLabels {
		if st.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, st.Labels[k], v)
		}
	}

	if err := e.Start(ctx, ref); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := e.Start(ctx, ref); err != nil {
		t.Errorf("start of a running container: %v", err)
	}
	st = e.waitState(t, ref, "running", phaseIs(runtime.PhaseRunning))
	if st.StartedAt == nil || st.ExitCode != nil {
		t.Errorf("running: %+v", st)
	}

	list, err := e.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list) != 1 || list[0].InstanceID != inst.ID || list[0].Node != "h1" || list[0].Phase != runtime.PhaseRunning {
		t.Errorf("list = %+v", list)
	}

	e.waitReady(t, ref)
	if err := e.Stop(ctx, ref, 10*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	st, err = e.Inspect(ctx, ref)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if st.Phase != runtime.PhaseExited || st.ExitCode == nil || *st.ExitCode != 0 || st.FinishedAt == nil || st.OOMKilled {
		t.Errorf("after a polite stop: %+v (exit %v)", st, st.ExitCode)
	}
	if err := e.Stop(ctx, ref, time.Second); err != nil {
		t.Errorf("stop of a stopped container: %v", err)
	}

	// A stopped container starts again: the FSM allows stopped → start_pending.
	if err := e.Start(ctx, ref); err != nil {
		t.Fatalf("restart: %v", err)
	}
	e.waitState(t, ref, "running again", phaseIs(runtime.PhaseRunning))

	if err := e.Delete(ctx, ref); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := e.Delete(ctx, ref); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if _, err := e.Inspect(ctx, ref); !runtime.IsNotFound(err) {
		t.Errorf("inspect after delete: %v, want not found", err)
	}
	for name, err := range map[string]error{
		"start": e.Start(ctx, ref),
		"stop":  e.Stop(ctx, ref, 0),
	} {
		if !runtime.IsNotFound(err) {
			t.Errorf("%s after delete: %v, want not found", name, err)
		}
	}
}

func TestCreateAdopts(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 60*time.Second)
	inst := e.instance("sleep 60")

	first, err := e.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// A retry that knows the node, and one that lost it (a crash before the
	// node was recorded): both adopt the container already made.
	pinned := inst.Clone()
	pinned.RuntimeNodeName = first.Node
	for _, in := range []berth.Instance{pinned, inst} {
		again, err := e.Create(ctx, in)
		if err != nil {
			t.Fatalf("create again (node %q): %v", in.RuntimeNodeName, err)
		}
		if again != first {
			t.Errorf("create again (node %q) = %+v, want %+v", in.RuntimeNodeName, again, first)
		}
	}
	list, err := e.List(ctx)
	if err != nil || len(list) != 1 {
		t.Errorf("list after three creates = %d containers, %v; want one", len(list), err)
	}

	// A container of that name that is not this instance's is a conflict.
	squatter := e.instance("sleep 60")
	cli := e.Client("h1")
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       runtime.ObjectName(squatter.ID),
		Config:     &container.Config{Image: e.image, Cmd: []string{"true"}, Labels: map[string]string{"berth.scope": e.scope}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatalf("bare create: %v", err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(testenv.Context(t, 10*time.Second), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	squatter.RuntimeNodeName = "h1"
	_, err = e.Create(ctx, squatter)
	if !runtime.IsConflict(err) {
		t.Errorf("create over a stranger's container: %v, want conflict", err)
	}
	noSecret(t, err)
}

func TestRefWithoutNode(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 60*time.Second)
	inst := e.instance("sleep 60")
	if _, err := e.Create(ctx, inst); err != nil {
		t.Fatalf("create: %v", err)
	}
	// Only the instance id is known: the container is found by its name.
	ref := runtime.Ref{InstanceID: inst.ID}
	st, err := e.Inspect(ctx, ref)
	if err != nil || st.Node != "h1" {
		t.Fatalf("inspect without node: %+v, %v", st, err)
	}
	if err := e.Delete(ctx, ref); err != nil {
		t.Fatalf("delete without node: %v", err)
	}
	if err := e.Delete(ctx, ref); err != nil {
		t.Errorf("delete without node, again: %v", err)
	}
	if _, err := e.Inspect(ctx, ref); !runtime.IsNotFound(err) {
		t.Errorf("inspect after delete: %v", err)
	}
	if err := e.Start(ctx, runtime.Ref{InstanceID: inst.ID, Node: "nowhere"}); !runtime.IsInvalid(err) {
		t.Errorf("unknown node: %v, want invalid", err)
	}
}
