package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/monitor"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/wiring"
	"github.com/berth-io/berth/internal/worker"
)

var (
	owner = identity.Caller{User: "alice"}
	admin = identity.Caller{User: "root", Admin: true}
	quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))
)

// engine is the real Docker runtime in a scope of the test's own.
func engine(t *testing.T) *docker.Runtime { return dockertest.Engine(t) }

// background runs fn until the test ends.
func background(t *testing.T, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestServerlessPath drives the request loop as AWS runs it, each hop a real
// part: the manager writes to DynamoDB Local, the outbox table's real stream
// is read and fed to the dispatcher handler, which sends to the SQS emulator,
// whose messages are fed to the worker Lambda handler, which drives a real
// Docker engine.
func TestServerlessPath(t *testing.T) {
	image := testenv.TestImage(t)
	sqsEndpoint := testenv.SQSEndpoint(t)
	rt := engine(t)
	ddb := teststores.DynamoClient(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("e2e%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})

	sc := sqsqueue.NewLocalClient(sqsEndpoint)
	queues := map[outbox.QueueName]*sqsqueue.Queue{}
	cfg := config.Default()
	for _, name := range []outbox.QueueName{outbox.CreateQueue, outbox.LifecycleQueue} {
		p, err := sqsqueue.CreateWithDLQ(ctx, sc, prefix+string(name), sqsqueue.SetupOptions{VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), sc, p) })
		queues[name] = sqsqueue.New(sc, p.URL)
		if name == outbox.CreateQueue {
			cfg.Queue.CreateQueueURL = p.URL
		} else {
			cfg.Queue.LifecycleQueueURL = p.URL
		}
	}

	// The dispatcher Lambda, fed by the real stream.
	table := dynamostore.TableName(prefix, dynamostore.TableOutbox)
	arn, err := streampump.StreamARN(ctx, ddb, table)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := streampump.NewReader(ctx, streampump.NewLocalClient(testenv.DynamoDBEndpoint(t)), arn, streamtypes.ShardIteratorTypeTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	handler := &lambdastream.Handler{
		Dispatcher:  &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: queues[outbox.CreateQueue], outbox.LifecycleQueue: queues[outbox.LifecycleQueue]}, Store: st, Logger: quiet},
		OutboxTable: table, Logger: quiet,
	}
	pump := &streampump.Pump{Reader: reader, Handler: handler.Handle}
	background(t, func(ctx context.Context) { _ = pump.Run(ctx) })

	// The worker Lambda, fed by an SQS poller that plays the event source
	// mapping: batches in, successes deleted, failures left to their
	// visibility (the handler set it to the backoff).
	fn, err := newFunction(cfg, st, rt, sc, nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var invocations atomic.Int64
	for _, q := range queues {
		background(t, func(ctx context.Context) { pollSQS(ctx, t, q, fn, &invocations) })
	}
	// The state loop, as the local server or a watcher task would run it.
	m := manager.New(manager.Options{Store: st, MaxPending: 50, Logger: quiet})
	background(t, func(ctx context.Context) { monitor.Run(ctx, rt, m, quiet) })

	scenario(t, m, st, rt, image)
	if invocations.Load() == 0 {
		t.Fatal("the worker handler was never invoked")
	}
}

// pollSQS receives from q and invokes the worker handler with the batch as
// a Lambda SQS event.
func pollSQS(ctx context.Context, t *testing.T, q *sqsqueue.Queue, fn *function, invocations *atomic.Int64) {
	for ctx.Err() == nil {
		ds, err := q.Receive(ctx, 10, time.Second)
		if err != nil || len(ds) == 0 {
			continue
		}
		ev := events.SQSEvent{}
		for _, d := range ds {
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: d.MessageID, ReceiptHandle: d.Handle, Body: string(d.Body),
				EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + wiring.QueueName(q.URL()),
				Attributes: map[string]string{
					"ApproximateReceiveCount": strconv.Itoa(d.ReceiveCount),
					"SentTimestamp":           strconv.FormatInt(d.SentAt.UnixMilli(), 10),
				},
			})
		}
		invocations.Add(1)
		resp := fn.handle(ctx, ev)
		for _, d := range ds {
			if !slices.ContainsFunc(resp.BatchItemFailures, func(f events.SQSBatchItemFailure) bool { return f.ItemIdentifier == d.MessageID }) {
				_ = q.Ack(context.WithoutCancel(ctx), d)
			}
		}
	}
}

// TestInProcessPath is the same scenario through the local server's path:
// the embedded store, the watcher (commit-driven dispatch), in-process
// queues and the consumer loop.
func TestInProcessPath(t *testing.T) {
	image := testenv.TestImage(t)
	rt := engine(t)
	st := teststores.Bolt(t, time.Now)
	queues := map[outbox.QueueName]queue.Queue{}
	for _, name := range []outbox.QueueName{outbox.CreateQueue, outbox.LifecycleQueue} {
		q := memqueue.New(memqueue.Options{Name: string(name), VisibilityTimeout: time.Minute, MaxReceives: 5})
		t.Cleanup(func() { q.Close() })
		queues[name] = q
	}
	watcher := outbox.NewWatcher(&outbox.Dispatcher{Queues: queues, Store: st, Logger: quiet}, outbox.WatcherOptions{Logger: quiet})
	background(t, func(ctx context.Context) { _ = watcher.Run(ctx) })
	m := manager.New(manager.Options{Store: st, OnCommit: watcher.Committed, MaxPending: 50, Logger: quiet})
	res, err := runtime.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(worker.Options{Manager: m, Store: st, Runtimes: res, CreateSlots: worker.NewSlots(3), Logger: quiet, StopGrace: time.Second})
	for name, q := range queues {
		n := 8
		if name == outbox.CreateQueue {
			n = 3
		}
		background(t, func(ctx context.Context) { _ = w.Consume(ctx, q, n) })
	}
	background(t, func(ctx context.Context) { monitor.Run(ctx, rt, m, quiet) })
	scenario(t, m, st, rt, image)
}

// scenario: create → running → stop → stopped → start → running → delete →
// gone, container gone, events kept; a container that exits 0 → stopped and
// one that exits 3 → failed with its exit code.
func scenario(t *testing.T, m *manager.Manager, st store.Store, rt runtime.Runtime, image string) {
	t.Helper()
	ctx := context.Background()
	for name, script := range map[string]string{"sleeper": "sleep 3600", "ok": "exit 0", "bad": "exit 3"} {
		if _, _, err := m.PutTemplate(ctx, admin, container.Template{Name: name, Runtime: "docker", Image: image,
			PullPolicy: container.PullNever, Command: []string{"sh", "-c", script}}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(id string, want fsm.Status) container.Instance {
		t.Helper()
		inst, err := m.Wait(ctx, owner, id, want, 60*time.Second)
		if err != nil {
			t.Fatalf("waiting for %s: %v (status %s: %s)", want, err, inst.Status, inst.StatusReason)
		}
		return inst
	}
	create := func(tpl string) container.Instance {
		res, err := m.CreateByTemplate(ctx, owner, manager.CreateRequest{Template: tpl}, nil, "e2e")
		if err != nil {
			t.Fatal(err)
		}
		return res.Instance
	}
	inst := create("sleeper")
	ok, bad := create("ok"), create("bad")
	running := wait(inst.ID, fsm.Running)
	if running.RuntimeNodeName != "local" {
		t.Fatalf("node %q", running.RuntimeNodeName)
	}
	if _, err := m.Stop(ctx, owner, inst.ID, nil, "e2e"); err != nil {
		t.Fatal(err)
	}
	wait(inst.ID, fsm.Stopped)
	if _, err := m.Start(ctx, owner, inst.ID, nil, "e2e"); err != nil {
		t.Fatal(err)
	}
	wait(inst.ID, fsm.Running)
	if _, err := m.Delete(ctx, owner, inst.ID, nil, "e2e"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := m.Get(ctx, owner, inst.ID)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("instance not deleted within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := rt.Inspect(ctx, runtime.RefOf(running)); !runtime.IsNotFound(err) {
		t.Fatalf("container still there after delete: %v", err)
	}
	evs, err := m.Events(ctx, owner, inst.ID, "", 100)
	if err != nil || len(evs.Items) < 10 || evs.Items[len(evs.Items)-1].Type != container.EventDeleted {
		t.Fatalf("events after delete: %v %+v", err, evs.Items)
	}
	if s := wait(ok.ID, fsm.Stopped); s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("exit 0: %+v", s)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		f, err := m.Get(ctx, owner, bad.ID)
		if err == nil && f.Status == fsm.Failed {
			if f.ExitCode == nil || *f.ExitCode != 3 {
				t.Fatalf("exit 3: %+v", f)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exit-3 container: %+v, %v", f, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, err := st.AdmissionCount(ctx); err != nil || n != 0 {
		t.Fatalf("admission counter %d, %v after every create finished", n, err)
	}
}
