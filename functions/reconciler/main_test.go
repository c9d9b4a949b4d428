package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/berth-io/berth/internal/scheduletick"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

const fixture = "../../events/reconciler-scheduled.json"

func readFixture(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestFixtureRoundTrip keeps the fixture in EventBridge's own shape: it
// decodes into events.EventBridgeEvent with every field known and encodes
// back to the same JSON.
func TestFixtureRoundTrip(t *testing.T) {
	ev := testenv.RoundTrip[events.EventBridgeEvent](t, fixture, nil)
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Time.IsZero() || len(ev.Resources) != 1 {
		t.Errorf("decoded %+v: not a scheduled event", ev)
	}
}

// TestScheduledEventRunsAPass invokes the handler as Lambda would, with the
// fixture, on DynamoDB Local, a real Docker engine (a scope of the test's
// own) and the outbox dispatcher as the sweeper: the pass brings a creating
// instance whose container runs to running, sweeps the stale create items
// onto the create queue, and returns its Report as the function's result.
func TestScheduledEventRunsAPass(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	image := testenv.TestImage(t)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rt := dockertest.Engine(t)
	scope := rt.Scope()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	create := memqueue.New(memqueue.Options{Name: "create"})
	lifecycle := memqueue.New(memqueue.Options{Name: "lifecycle"})
	t.Cleanup(func() { create.Close(); lifecycle.Close() })
	sweeper := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: create, outbox.LifecycleQueue: lifecycle},
		Store: st, Logger: quiet,
		// Its clock runs ahead, so the items just written are already stale.
		Clock: func() time.Time { return time.Now().Add(time.Minute) }}

	cfg := config.Default()
	cfg.Container.OutboxSweepAfter = time.Second
	cfg.Docker.Scope = scope
	var logs bytes.Buffer
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, sweeper, nil, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}

	// A creating instance whose container runs (its create item was never
	// dispatched: the sweep sends it), and a pending one.
	m := manager.New(manager.Options{Store: st, Logger: quiet})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "sleeper",
		Runtime: "docker", Image: image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", "sleep 3600"}}); err != nil {
		t.Fatal(err)
	}
	var insts []container.Instance
	for range 2 {
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "sleeper"}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, res.Instance)
	}
	inst, err := st.Transition(ctx, store.TransitionParams{ID: insts[0].ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := rt.Create(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}

	var ev events.EventBridgeEvent
	if err := json.Unmarshal(readFixture(t), &ev); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := fn.handle(ctx, ev)
	if err != nil {
		t.Fatalf("handle: %v\n%s", err, logs.String())
	}
	t.Logf("pass in %s: %+v", time.Since(start), rep)
	if rep.Started != 1 || rep.OutboxSwept != 2 || rep.Errors != 0 || rep.Instances != 2 || rep.SweepSkipped {
		t.Errorf("report %+v: want 1 started, 2 swept, no errors over 2 instances\n%s", rep, logs.String())
	}
	if got, _ := st.GetInstance(ctx, inst.ID); got.Status != fsm.Running || got.RuntimeNodeName != "local" {
		t.Errorf("instance %s on %q, want running on local", got.Status, got.RuntimeNodeName)
	}
	if s := create.Stats(); s.Total() != 2 {
		t.Errorf("create queue holds %+v, want the 2 swept creates", s)
	}

	// The Report is the function's JSON result.
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"pass_id":`, `"started":1`, `"outbox_swept":2`, `"admission_before":`, `"list_partial":false`} {
		if !bytes.Contains(out, []byte(key)) {
			t.Errorf("result %s lacks %s", out, key)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"scheduled reconcile","event_id":"89d1a02d-5ec7-412e-82f5-13505f849b41"`) {
		t.Errorf("no log line for the event:\n%s", logs.String())
	}
}

// A deadline closer than the pass needs ends the pass early: the Report
// says Truncated and the invocation does not fail.
func TestHandleNearDeadlineReturnsTruncated(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: "local", Endpoint: "unix:///run/berth-test/no-such-engine.sock"}}},
		docker.Options{Scope: "rcfn-deadline"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Docker.Scope = "rcfn-deadline"
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, nil, nil, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadlineMargin) // nothing left after the margin
	defer cancel()
	rep, err := fn.handle(ctx, events.EventBridgeEvent{ID: "x"})
	if err != nil || !rep.Truncated {
		t.Errorf("handle near the deadline: %v, %+v", err, rep)
	}
}

func TestLoadConfigFixesTheStore(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := loadConfig(env(map[string]string{"BERTH_STORE_TABLE_PREFIX": "prod-"}))
	if err != nil || cfg.Store.Backend != config.StoreDynamoDB || cfg.Store.TablePrefix != "prod-" {
		t.Errorf("loadConfig = %+v, %v", cfg, err)
	}
	if _, err := loadConfig(env(map[string]string{"BERTH_STORE_BACKEND": "bolt"})); err == nil {
		t.Error("a bolt store was accepted")
	}
}

// TestExitNoticedInOnePass is the state loop's bound on AWS, where no
// function holds a Docker event stream open: a running instance whose
// container exits by itself is recorded (failed, with its exit code) by the
// very next scheduled pass, so an exit is noticed at most one schedule
// period (ReconcileSchedule, rate(1 minute) by default) plus one pass after
// it happens.
func TestExitNoticedInOnePass(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	image := testenv.TestImage(t)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rt := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := config.Default()
	cfg.Docker.Scope = rt.Scope()
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	m := manager.New(manager.Options{Store: st, Logger: quiet})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "exits",
		Runtime: "docker", Image: image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "exits"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := rt.Create(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}
	// The container ends on its own; nobody but the next pass looks.
	for {
		s, err := rt.Inspect(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if s.Phase == runtime.PhaseExited {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("container still %s", s.Phase)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got, _ := st.GetInstance(ctx, inst.ID); got.Status != fsm.Running {
		t.Fatalf("instance %s before the pass, want still running", got.Status)
	}
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(readFixture(t), &ev); err != nil {
		t.Fatal(err)
	}
	if _, err := fn.handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetInstance(ctx, inst.ID)
	if err != nil || got.Status != fsm.Failed || got.ExitCode == nil || *got.ExitCode != 3 {
		t.Fatalf("after one pass: %+v, %v; want failed with exit code 3", got, err)
	}
}

// schedulerFixture is what EventBridge Scheduler invokes the function with.
const schedulerFixture = "../../events/reconciler-scheduler.json"

// TestSchedulerFixture keeps events/reconciler-scheduler.json in the shape
// template.yaml's schedule sends: its target Input with the context
// attributes filled in (every key, nothing else), which the Lambda
// handler decodes.
func TestSchedulerFixture(t *testing.T) {
	in := testenv.RoundTrip[scheduletick.Input](t, schedulerFixture, nil)
	if !strings.HasPrefix(in.ScheduleARN, "arn:aws:scheduler:") || in.ExecutionID == "" || in.AttemptNumber != "1" {
		t.Errorf("decoded %+v", in)
	}
	if _, err := time.Parse(time.RFC3339, in.ScheduledTime); err != nil {
		t.Errorf("scheduled_time: %v", err)
	}
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The template's Input, filled in with the fixture's values, is the fixture.
	re := regexp.MustCompile(`(?m)^\s+Input: '(\{"schedule_arn".*\})'$`)
	m := re.FindSubmatch(raw)
	if m == nil {
		t.Fatal("template.yaml's ReconcileSchedule has no Input")
	}
	filled := strings.NewReplacer("<aws.scheduler.schedule-arn>", in.ScheduleARN, "<aws.scheduler.scheduled-time>", in.ScheduledTime,
		"<aws.scheduler.execution-id>", in.ExecutionID, "<aws.scheduler.attempt-number>", in.AttemptNumber).Replace(string(m[1]))
	var fromTemplate, fixture map[string]any
	if err := json.Unmarshal([]byte(filled), &fromTemplate); err != nil {
		t.Fatalf("template Input: %v", err)
	}
	if err := json.Unmarshal(readFile(t, schedulerFixture), &fixture); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromTemplate, fixture) {
		t.Errorf("template.yaml's Input gives %v, the fixture is %v", fromTemplate, fixture)
	}
	var tk tick
	if err := json.Unmarshal(readFile(t, schedulerFixture), &tk); err != nil || tk.Input != in {
		t.Errorf("the handler's event: %+v, %v", tk, err)
	}
}

// TestSchedulerEventRunsAPass invokes the Lambda handler with the
// Scheduler's event on DynamoDB Local and a real Docker engine: the pass
// runs and says which tick it ran for.
func TestSchedulerEventRunsAPass(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	rt := dockertest.Engine(t)
	cfg := config.Default()
	cfg.Docker.Scope = rt.Scope()
	var logs bytes.Buffer
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, nil, nil, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var tk tick
	if err := json.Unmarshal(readFile(t, schedulerFixture), &tk); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := fn.handleTick(ctx, tk)
	if err != nil || rep.Truncated {
		t.Fatalf("handleTick: %v, %+v\n%s", err, rep, logs.String())
	}
	if !strings.Contains(logs.String(), `"execution_id":"d32c5kddcf5bb8c3"`) {
		t.Errorf("the pass does not say which tick it ran for:\n%s", logs.String())
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
