package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/worker"
)

// broken wraps the real engine with a Create that always fails as an
// engine answering 500 does (an unreachable engine spends no attempt).
type broken struct {
	runtime.Runtime
	creates atomic.Int32
}

func (b *broken) Create(ctx context.Context, inst container.Instance) (runtime.Ref, error) {
	b.creates.Add(1)
	return runtime.Ref{}, runtime.Errorf(runtime.ErrFailed, "create", inst.ID, "", "injected: engine error")
}

// TestDeadLetter: a create whose runtime always fails is retried with
// backoff through the queue's visibility, then the instance is failed with
// the error, the admission slot released, and the message lands in the
// dead-letter queue: on the in-process queue and on the SQS emulator.
func TestDeadLetter(t *testing.T) {
	for _, kind := range []string{"memqueue", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			image := testenv.TestImage(t)
			rt := &broken{Runtime: engine(t)}
			st := teststores.Bolt(t, time.Now)
			m := manager.New(manager.Options{Store: st, MaxPending: 50, Logger: quiet})
			res, _ := runtime.NewResolver(rt)
			w := worker.New(worker.Options{Manager: m, Store: st, Runtimes: res, Logger: quiet, MaxAttempts: 3,
				Backoff: func(int) time.Duration { return time.Second }})
			var q, dlq queue.Queue
			switch kind {
			case "memqueue":
				mq := memqueue.New(memqueue.Options{VisibilityTimeout: time.Minute, MaxReceives: 3})
				t.Cleanup(func() { mq.Close() })
				q, dlq = mq, mq.DeadLetter()
			case "sqs":
				sc := sqsqueue.NewLocalClient(testenv.SQSEndpoint(t))
				p, err := sqsqueue.CreateWithDLQ(context.Background(), sc, fmt.Sprintf("dlq%d", time.Now().UnixNano()%1e9),
					sqsqueue.SetupOptions{VisibilityTimeout: time.Minute, MaxReceiveCount: 3})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), sc, p) })
				q, dlq = sqsqueue.New(sc, p.URL), sqsqueue.New(sc, p.DLQURL)
			}
			d := &outbox.Dispatcher{Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: q, outbox.LifecycleQueue: q}, Store: st, Logger: quiet}
			ctx := context.Background()
			if _, _, err := m.PutTemplate(ctx, admin, container.Template{Name: "s", Runtime: "docker", Image: image,
				PullPolicy: container.PullNever, Command: []string{"sleep", "60"}}); err != nil {
				t.Fatal(err)
			}
			created, err := m.CreateByTemplate(ctx, owner, manager.CreateRequest{Template: "s"}, nil, "dlq")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Sweep(ctx, -time.Hour); err != nil {
				t.Fatal(err)
			}
			background(t, func(ctx context.Context) { _ = w.Consume(ctx, q, 1) })

			inst, err := m.Wait(ctx, owner, created.Instance.ID, fsm.Failed, 30*time.Second)
			if err != nil {
				t.Fatalf("instance never failed: %v (%s)", err, inst.Status)
			}
			if !strings.Contains(inst.StatusReason, "injected: engine error") || !strings.Contains(inst.StatusReason, "3 attempts") {
				t.Fatalf("status_reason %q", inst.StatusReason)
			}
			if n, _ := st.AdmissionCount(ctx); n != 0 {
				t.Fatalf("admission counter %d, want 0", n)
			}
			ds, err := dlq.Receive(ctx, 10, 20*time.Second)
			if err != nil || len(ds) != 1 {
				t.Fatalf("dead-letter queue: %d messages, %v", len(ds), err)
			}
			msg, err := outbox.Decode(ds[0].Body)
			if err != nil || msg.InstanceID != inst.ID || msg.Op != container.OpCreate {
				t.Fatalf("dead letter %+v, %v", msg, err)
			}
			if n := rt.creates.Load(); n != 3 {
				t.Fatalf("%d create attempts, want 3", n)
			}
		})
	}
}
