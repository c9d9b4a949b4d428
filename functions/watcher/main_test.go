package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/berth-io/berth/internal/scheduletick"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// rig is a watcher function on DynamoDB Local and the real test engine (a
// scope of its own), with its logs and metrics kept.
type rig struct {
	t    *testing.T
	st   store.Store
	rt   *docker.Runtime
	fn   *function
	logs *testenv.SyncBuffer
	emf  *testenv.SyncBuffer
	// seen gets every observation the state loop was fed, once applied.
	seen chan manager.Observation
}

// tap is the state loop, telling the test of every observation.
type tap struct {
	loop interface {
		OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error)
	}
	seen chan<- manager.Observation
}

func (tp tap) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	applied, err := tp.loop.OnEvent(ctx, ob)
	select {
	case tp.seen <- ob:
	default:
	}
	return applied, err
}

// newRig builds the rig; extra nodes are watched before the engine.
func newRig(t *testing.T, extra ...configured.Node) *rig {
	t.Helper()
	r := &rig{t: t, st: teststores.Dynamo(t, time.Now), rt: dockertest.Engine(t), logs: &testenv.SyncBuffer{}, emf: &testenv.SyncBuffer{}}
	cfg := config.Default()
	cfg.Docker.Scope = r.rt.Scope()
	nodes := slices.Concat(extra, []configured.Node{{Kind: container.RuntimeDocker, Name: "local", Runtime: r.rt}})
	fn, err := newFunction(cfg, r.st, nodes, []runtime.Runtime{r.rt}, metrics.New(r.emf, map[string]string{"Function": "watcher"}),
		slog.New(slog.NewJSONHandler(r.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.seen = make(chan manager.Observation, 256)
	fn.loop = tap{loop: fn.loop, seen: r.seen}
	r.fn = fn
	return r
}

// running makes a running instance whose container sleeps on the engine.
func (r *rig) running(ctx context.Context) (container.Instance, runtime.Ref) {
	r.t.Helper()
	return r.runningScript(ctx, "sleeper", "exec sleep 3600")
}

// runningScript makes a running instance whose container runs script (sh
// -c) on the engine, from a template of that name.
func (r *rig) runningScript(ctx context.Context, template, script string) (container.Instance, runtime.Ref) {
	r.t.Helper()
	m := manager.New(manager.Options{Store: r.st, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: template,
		Runtime: "docker", Image: testenv.TestImage(r.t), PullPolicy: container.PullNever, Command: []string{"sh", "-c", script}}); err != nil {
		r.t.Fatal(err)
	}
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: template}, nil, "")
	if err != nil {
		r.t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if inst, err = r.st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			r.t.Fatal(err)
		}
	}
	ref, err := r.rt.Create(ctx, inst)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.rt.Start(ctx, ref); err != nil {
		r.t.Fatal(err)
	}
	return inst, ref
}

// kill ends the container behind berth's back (SIGKILL: exit code 137).
func (r *rig) kill(ctx context.Context, ref runtime.Ref) {
	r.t.Helper()
	if err := r.rt.Stop(ctx, ref, 0); err != nil {
		r.t.Fatal(err)
	}
}

// invoke runs one invocation for d (its deadline is d plus the margin) and
// returns a function that ends it at once (as a killed instance ends) and
// then returns its Report.
func (r *rig) invoke(ctx context.Context, d time.Duration) (stop func() Report) {
	ictx, cancel := context.WithTimeout(ctx, d+deadlineMargin)
	done := make(chan Report, 1)
	go func() {
		rep, err := r.fn.handle(ictx)
		if err != nil && !errors.Is(err, context.Canceled) { // killed before it began
			r.t.Errorf("handle: %v", err)
		}
		done <- rep
	}()
	return func() Report { cancel(); return <-done }
}

// status waits until the instance has want (or fails after within).
func (r *rig) status(ctx context.Context, id string, want fsm.Status, within time.Duration) container.Instance {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		inst, err := r.st.GetInstance(ctx, id)
		if err != nil {
			r.t.Fatal(err)
		}
		if inst.Status == want {
			return inst
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("instance %s is %s after %v, want %s\n%s", id, inst.Status, within, want, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exits counts the instance's recorded exits (ContainerExited, or
// ContainerFailed for a non-zero exit).
func (r *rig) exits(ctx context.Context, id string) int {
	r.t.Helper()
	page, err := r.st.ListEvents(ctx, id, "", 100)
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, e := range page.Items {
		if e.Type == container.EventExited || e.Type == container.EventFailed {
			n++
		}
	}
	return n
}

// TestWatcherRecordsExit: a container killed behind berth's back while an
// invocation watches is recorded (failed, exit code 137) by that
// invocation within seconds, not at the reconciler's next pass.
func TestWatcherRecordsExit(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, ref := r.running(ctx)
	stop := r.invoke(ctx, time.Minute)
	r.kill(ctx, ref)
	killed := time.Now()
	got := r.status(ctx, inst.ID, fsm.Failed, 5*time.Second)
	t.Logf("recorded %v after the kill", time.Since(killed))
	if got.ExitCode == nil || *got.ExitCode != 137 || got.RuntimeNodeName != "local" {
		t.Errorf("instance %+v: want exit code 137 on local", got)
	}
	rep := stop()
	if len(rep.Nodes) != 1 || rep.Nodes[0].Transitions != 1 || rep.Nodes[0].Unavailable != "" {
		t.Errorf("report %+v: want one transition on an available node", rep)
	}
	if !rep.Since.Before(rep.Start) || rep.Start.Sub(rep.Since) < rep.Until.Sub(rep.Start)-time.Second {
		t.Errorf("report %+v: the replay does not reach one invocation back", rep)
	}
	if !strings.Contains(r.emf.String(), `"WatcherEvents":`) {
		t.Errorf("no WatcherEvents metric:\n%s", r.emf.String())
	}
}

// TestWatcherKilledMidInvocation: an invocation dies (its context ends at
// once, as when its instance is killed); the container exits while nothing
// watches; the next invocations, two of them overlapping, replay the
// engine's events since before the gap: the exit is recorded once, with
// one exit event, whichever of them sees it first.
func TestWatcherKilledMidInvocation(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, ref := r.running(ctx)
	dead := r.invoke(ctx, time.Minute)
	dead() // killed mid-invocation
	r.kill(ctx, ref)
	// The engine has reported the exit; nothing listened.
	if s, err := r.rt.Inspect(ctx, ref); err != nil || s.Phase != runtime.PhaseExited {
		t.Fatalf("container %+v, %v: want exited", s, err)
	}
	if got, _ := r.st.GetInstance(ctx, inst.ID); got.Status != fsm.Running {
		t.Fatalf("instance %s with nothing watching, want still running", got.Status)
	}
	var stops []func() Report
	for range 2 {
		stops = append(stops, r.invoke(ctx, 30*time.Second))
	}
	got := r.status(ctx, inst.ID, fsm.Failed, 10*time.Second)
	if got.ExitCode == nil || *got.ExitCode != 137 {
		t.Errorf("exit code %v, want 137", got.ExitCode)
	}
	// Both invocations replay the exit: wait until both have fed it.
	timeout := time.After(10 * time.Second)
	for exits := 0; exits < 2; {
		select {
		case ob := <-r.seen:
			if ob.InstanceID == inst.ID && ob.Kind == manager.ObservedExited {
				exits++
			}
		case <-timeout:
			t.Fatalf("the exit was fed %d times within 10s, want once per invocation", exits)
		}
	}
	var transitions, events int64
	for _, stop := range stops {
		rep := stop()
		transitions += rep.Nodes[0].Transitions
		events += rep.Nodes[0].Events
	}
	if transitions != 1 || events < 2 {
		t.Errorf("%d transitions from %d events over the two invocations, want exactly 1 from at least 2 (the exit seen twice)", transitions, events)
	}
	if n := r.exits(ctx, inst.ID); n != 1 {
		t.Errorf("%d exit events recorded, want 1", n)
	}
}

// TestWatcherHostDown: one of two hosts does not answer. The other's exit
// is still recorded at once; the down host is named in the logs, in the
// WatcherNodeUnavailable metric (1 for it, 0 for the other) and in the
// Report.
func TestWatcherHostDown(t *testing.T) {
	downRT, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: "down", Endpoint: "unix:///run/berth-test/no-such-engine.sock"}}},
		docker.Options{Scope: "watcher-down", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, configured.Node{Kind: container.RuntimeDocker, Name: "down", Runtime: downRT})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, ref := r.running(ctx)
	stop := r.invoke(ctx, time.Minute)
	r.kill(ctx, ref)
	r.status(ctx, inst.ID, fsm.Failed, 5*time.Second)
	rep := stop()
	if len(rep.Nodes) != 2 || rep.Nodes[0].Node != "down" || rep.Nodes[0].Unavailable == "" || rep.Nodes[1].Unavailable != "" ||
		rep.Nodes[1].Transitions != 1 {
		t.Errorf("report %+v: want down unavailable, local available with the transition", rep)
	}
	if !strings.Contains(r.logs.String(), `"msg":"node unavailable: its events wait for it or the reconciler","kind":"docker","node":"down"`) {
		t.Errorf("the down host is not logged:\n%s", r.logs.String())
	}
	down := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(r.emf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		if v, ok := m[MetricNodeUnavailable].(float64); ok {
			down[m["Node"].(string)] = v
		}
	}
	if down["down"] != 1 || down["local"] != 0 || len(down) != 2 {
		t.Errorf("%s per node %v, want down 1 and local 0", MetricNodeUnavailable, down)
	}
}

// schedulerFixture is what EventBridge Scheduler invokes the function with.
const schedulerFixture = "../../events/watcher-scheduler.json"

// TestSchedulerFixture: events/watcher-scheduler.json has the shape the
// template's WatchSchedule sends (every key, nothing else), and the
// handler says which tick it watches for.
func TestSchedulerFixture(t *testing.T) {
	in := testenv.RoundTrip[scheduletick.Input](t, schedulerFixture, nil)
	if !strings.Contains(in.ScheduleARN, ":schedule/") || in.ExecutionID == "" || in.AttemptNumber != "1" {
		t.Errorf("decoded %+v", in)
	}
	if _, err := time.Parse(time.RFC3339, in.ScheduledTime); err != nil {
		t.Errorf("scheduled_time: %v", err)
	}
	var logs bytes.Buffer
	fn := &function{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), deadlineMargin+100*time.Millisecond)
	defer cancel()
	if _, err := fn.handleTick(ctx, tick{Input: in}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"execution_id":"`+in.ExecutionID+`"`) || !strings.Contains(logs.String(), `"msg":"watch ended"`) {
		t.Errorf("the invocation does not say which tick it watched for:\n%s", logs.String())
	}
}
