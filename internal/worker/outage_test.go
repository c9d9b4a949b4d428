package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/lambdasqs"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestRuntimeOutage: the engine is unreachable for more deliveries than
// max_attempts allows (the old retry budget, after which the operations
// failed with their containers still running), then it comes back. The
// accepted stop, start and delete all complete, nothing is dead-lettered
// and no attempt is spent: on both stores, through the in-process queue
// and the SQS emulator, whose maxReceiveCount equals max_attempts.
func TestRuntimeOutage(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		for _, kind := range []string{"memqueue", "sqs"} {
			t.Run(kind, func(t *testing.T) { t.Parallel(); testOutage(t, newRig(t, b, 0), kind) })
		}
	})
}

const rigMaxAttempts = 5 // newRig's MaxAttempts

func outageQueues(t *testing.T, kind string) (q, dlq queue.Queue) {
	switch kind {
	case "memqueue":
		mq := memqueue.New(memqueue.Options{VisibilityTimeout: time.Minute, MaxReceives: rigMaxAttempts})
		t.Cleanup(func() { mq.Close() })
		return mq, mq.DeadLetter()
	default:
		sc := sqsqueue.NewLocalClient(testenv.SQSEndpoint(t))
		p, err := sqsqueue.CreateWithDLQ(context.Background(), sc, fmt.Sprintf("outage%d", time.Now().UnixNano()%1e9),
			sqsqueue.SetupOptions{VisibilityTimeout: time.Minute, MaxReceiveCount: rigMaxAttempts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), sc, p) })
		return sqsqueue.New(sc, p.URL), sqsqueue.New(sc, p.DLQURL)
	}
}

func testOutage(t *testing.T, r *rig, kind string) {
	ctx := context.Background()
	q, dlq := outageQueues(t, kind)
	running := func() container.Instance {
		inst := r.create("sleeper")
		if res := r.run(inst.ID, container.OpCreate); res.Reason != "done" {
			t.Fatalf("create: %+v", res)
		}
		return r.wantStatus(inst.ID, fsm.Running)
	}
	toStop, toStart, toDelete := running(), running(), running()
	if _, err := r.m.Stop(ctx, alice, toStart.ID, nil, "prepare"); err != nil {
		t.Fatal(err)
	}
	if res := r.run(toStart.ID, container.OpStop); res.Reason != "done" {
		t.Fatalf("stop: %+v", res)
	}

	// Three refused calls per round of deliveries: the outage outlasts
	// two more rounds than max_attempts.
	r.rt.upAfter, r.rt.up = 3*(rigMaxAttempts+2), make(chan struct{})
	r.rt.down.Store(true)
	for _, req := range []func() (manager.Result, error){
		func() (manager.Result, error) { return r.m.Stop(ctx, alice, toStop.ID, nil, "outage-stop") },
		func() (manager.Result, error) { return r.m.Start(ctx, alice, toStart.ID, nil, "outage-start") },
		func() (manager.Result, error) { return r.m.Delete(ctx, alice, toDelete.ID, nil, "outage-delete") },
	} {
		if _, err := req(); err != nil {
			t.Fatal(err)
		}
	}
	d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: q, outbox.LifecycleQueue: q}, Store: r.store}
	if n, err := d.Sweep(ctx, -time.Hour); err != nil || n != 3 {
		t.Fatalf("dispatched %d, %v", n, err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.w.Consume(cctx, q, 3) }()
	t.Cleanup(func() { stop(); <-done })

	select {
	case <-r.rt.up:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the outage never ended: %d calls refused", r.rt.downCalls.Load())
	}
	stopped := r.eventually(toStop.ID, fsm.Stopped)
	if st, err := r.engine.Inspect(ctx, runtime.RefOf(stopped)); err != nil || st.Phase != runtime.PhaseExited {
		t.Fatalf("stopped instance's container: %+v, %v", st, err)
	}
	started := r.eventually(toStart.ID, fsm.Running)
	if st, err := r.engine.Inspect(ctx, runtime.RefOf(started)); err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("started instance's container: %+v, %v", st, err)
	}
	if inst, err := r.m.Wait(ctx, alice, toDelete.ID, fsm.Running, 30*time.Second); !errors.Is(err, manager.ErrNotFound) {
		t.Fatalf("deleted instance: %s, %v", inst.Status, err)
	}
	if _, err := r.engine.Inspect(ctx, runtime.RefOf(toDelete)); !runtime.IsNotFound(err) {
		t.Fatalf("deleted instance's container: %v", err)
	}
	for _, id := range []string{toStop.ID, toStart.ID} {
		if inst := r.get(id); inst.StatusReason == "" || inst.Status == fsm.Failed {
			t.Fatalf("%s: %s (%s)", id, inst.Status, inst.StatusReason)
		}
	}
	if ds, err := dlq.Receive(ctx, 10, 0); err != nil || len(ds) != 0 {
		t.Fatalf("dead-letter queue: %d messages, %v", len(ds), err)
	}
	t.Logf("%d runtime calls refused during the outage, max_attempts %d", r.rt.downCalls.Load(), rigMaxAttempts)
}

// TestUnavailableRetryIsBounded: once unavailable_retry_for has passed
// since the runtime was first found unavailable, the operation gives up and
// the instance says why.
func TestUnavailableRetryIsBounded(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 0)
		ctx := context.Background()
		inst := r.create("sleeper")
		it := r.item(inst.ID, container.OpCreate)
		r.rt.down.Store(true)
		res := r.w.Process(ctx, delivery(t, it, 1))
		if res.Ack || res.Requeue == nil || res.Delay <= 0 {
			t.Fatalf("first unavailable delivery: %+v", res)
		}
		msg, err := outbox.Decode(res.Requeue.Body)
		if err != nil || msg.Unavailable == nil || msg.Unavailable.Retries != 1 || msg.Unavailable.PriorAttempts != 0 {
			t.Fatalf("re-sent message: %+v, %v", msg, err)
		}
		// The same wait, begun longer ago than the bound.
		msg.Unavailable.Since = time.Now().Add(-25 * time.Hour)
		body, _ := msg.Encode()
		res = r.w.Process(ctx, queue.Delivery{MessageID: "late", Body: body, ReceiveCount: 1})
		if !res.Ack || res.Requeue != nil {
			t.Fatalf("delivery past unavailable_retry_for: %+v", res)
		}
		failed := r.wantStatus(inst.ID, fsm.Failed)
		if want := "runtime unavailable for 25h"; !strings.Contains(failed.StatusReason, want) {
			t.Fatalf("status_reason %q, want it to say %q", failed.StatusReason, want)
		}
		// The owner reads the runtime's summary; its client's own words
		// (which may name a socket or an address) stay in the log.
		if cause := "injected: connection refused"; strings.Contains(failed.StatusReason, cause) ||
			!strings.Contains(failed.StatusReason, "on local: unavailable") {
			t.Fatalf("status_reason %q: want the runtime's summary without its cause %q", failed.StatusReason, cause)
		}
	})
}

// TestLambdaResendsDuringOutage: the worker Lambda answers a record whose
// runtime is unavailable by sending a fresh message to the record's queue
// (the SQS emulator) and reporting the record as done, so Lambda deletes it
// and SQS's receive count starts again; the fresh message carries the
// outage's start.
func TestLambdaResendsDuringOutage(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 0)
		ctx := context.Background()
		q, _ := outageQueues(t, "sqs")
		inst := r.create("sleeper")
		it := r.item(inst.ID, container.OpCreate)
		d := delivery(t, it, 4)
		r.rt.down.Store(true)
		resp := lambdasqs.Handle(ctx, r.w, q.(lambdasqs.Requeuer), events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: d.MessageID, Body: string(d.Body), ReceiptHandle: "h",
			Attributes: map[string]string{"ApproximateReceiveCount": "4"},
		}}}, nil)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch item failures %+v: the record must be deleted, its fresh copy sent", resp.BatchItemFailures)
		}
		ds, err := q.Receive(ctx, 10, 5*time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("re-sent messages: %d, %v", len(ds), err)
		}
		msg, err := outbox.Decode(ds[0].Body)
		if err != nil || msg.OutboxID != it.ID || msg.Unavailable == nil || msg.Unavailable.PriorAttempts != 3 ||
			ds[0].ReceiveCount != 1 || ds[0].Attributes[outbox.AttrOutboxID] != it.ID {
			t.Fatalf("re-sent message %+v (receive count %d, attributes %v), %v", msg, ds[0].ReceiveCount, ds[0].Attributes, err)
		}
		if got := r.get(inst.ID); got.Status != fsm.Pending {
			t.Fatalf("instance %s during the outage", got.Status)
		}
		if ob, _ := r.store.GetOutbox(ctx, it.ID); ob.Attempts != 3 || !strings.Contains(ob.LastError, "connection refused") {
			t.Fatalf("outbox item %+v: attempts must stay at the 3 spent before", ob)
		}
	})
}
