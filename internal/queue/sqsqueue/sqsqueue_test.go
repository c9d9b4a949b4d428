package sqsqueue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/queuetest"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
)

// faulty wraps the real client and makes SendMessageBatch report chosen
// entries as failed (without sending them), the way SQS does for throttled
// or invalid entries.
type faulty struct {
	*sqs.Client
	mu sync.Mutex
	// fail maps an entry id to how many more attempts fail, and whether the
	// failure is the sender's fault.
	fail  map[string]*fault
	calls int
}

type fault struct {
	times       int
	senderFault bool
}

func (f *faulty) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	f.calls++
	var keep []types.SendMessageBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, e := range in.Entries {
		if ft := f.fail[aws.ToString(e.Id)]; ft != nil && ft.times > 0 {
			ft.times--
			code := "InternalError"
			if ft.senderFault {
				code = "InvalidParameterValue"
			}
			failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(code), Message: aws.String("injected"), SenderFault: ft.senderFault})
			continue
		}
		keep = append(keep, e)
	}
	f.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	if len(keep) > 0 {
		cp := *in
		cp.Entries = keep
		real, err := f.Client.SendMessageBatch(ctx, &cp, opts...)
		if err != nil {
			return nil, err
		}
		out = real
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}

func TestSendReportsFailedEntries(t *testing.T) {
	c := client(t)
	p := newPair(t, c, queuetest.Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 3})
	f := &faulty{Client: c, fail: map[string]*fault{
		"bad":   {times: 99, senderFault: true}, // never accepted: reported, not retried
		"flaky": {times: 1},                     // accepted on the retry
		"down":  {times: 99},                    // retried twice, then reported
	}}
	q := sqsqueue.New(f, p.URL)
	ctx := context.Background()
	err := q.Send(ctx, []queue.Outgoing{
		{ID: "ok", Body: []byte("ok")}, {ID: "bad", Body: []byte("bad")},
		{ID: "flaky", Body: []byte("flaky")}, {ID: "down", Body: []byte("down")},
	})
	var be *queue.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("Send: %v, want a BatchError", err)
	}
	if len(be.Failed) != 2 || be.Failed["bad"] == nil || be.Failed["down"] == nil {
		t.Fatalf("failed entries %v, want bad and down", be.Failed)
	}
	var ee *sqsqueue.EntryError
	if !errors.As(be.Failed["bad"], &ee) || !ee.SenderFault || ee.Code != "InvalidParameterValue" {
		t.Errorf("bad: %v", be.Failed["bad"])
	}
	if f.calls != 3 {
		t.Errorf("%d SendMessageBatch calls, want 3 (one, then two retries of the entries not at fault)", f.calls)
	}
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		ds, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			got[string(d.Body)] = true
			_ = q.Ack(ctx, d)
		}
	}
	if !got["ok"] || !got["flaky"] || len(got) != 2 {
		t.Errorf("received %v, want ok and flaky", got)
	}
}

// TestEmulatorNotes records what the emulator does where SQS leaves room
// (logged, not asserted): a dead letter's receive count, and an ack with a
// stale receipt handle.
func TestEmulatorNotes(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	p := newPair(t, c, queuetest.Options{VisibilityTimeout: 1 * time.Second, MaxReceives: 1})
	q, dlq := sqsqueue.New(c, p.URL), sqsqueue.New(c, p.DLQURL)
	if err := q.Send(ctx, []queue.Outgoing{{ID: "a", Body: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	ds, _ := q.Receive(ctx, 1, 5*time.Second)
	if len(ds) != 1 {
		t.Fatal("no delivery")
	}
	_ = q.Nack(ctx, ds[0], 0)
	_, _ = q.Receive(ctx, 1, time.Second) // moves it to the DLQ
	dl, _ := dlq.Receive(ctx, 1, 5*time.Second)
	if len(dl) == 1 {
		t.Logf("dead letter: ReceiveCount %d, message id kept: %t", dl[0].ReceiveCount, dl[0].MessageID == ds[0].MessageID)
	}
	nackErr := q.Nack(ctx, ds[0], 0)
	t.Logf("Nack of a message no longer on the queue: %v", nackErr)
}
