// Package fanouttest gives the tests of sharded loops a shard queue on the
// SQS emulator and the records an event source would hand its function.
package fanouttest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/testenv"
)

// Queue is a shard queue on the SQS emulator with the deployed queues'
// visibility (longer than a period), deleted when the test ends.
func Queue(t testing.TB) *sqsqueue.Queue {
	t.Helper()
	c := sqsqueue.NewLocalClient(testenv.SQSEndpoint(t))
	name := fmt.Sprintf("fanout-%s-%d", strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()), time.Now().UnixNano())
	if len(name) > 70 { // SQS names are at most 80 characters, "-dlq" included
		name = name[len(name)-70:]
	}
	p, err := sqsqueue.CreateWithDLQ(context.Background(), c, name, sqsqueue.SetupOptions{VisibilityTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), c, p) })
	return sqsqueue.New(c, p.URL)
}

// Records reads what q holds until it has want messages or wait runs out,
// as records of an SQS event.
func Records(t testing.TB, q *sqsqueue.Queue, want int, wait time.Duration) []events.SQSMessage {
	t.Helper()
	var out []events.SQSMessage
	deadline := time.Now().Add(wait)
	for len(out) < want && time.Now().Before(deadline) {
		ds, err := q.Receive(context.Background(), queue.MaxBatch, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			out = append(out, events.SQSMessage{MessageId: d.MessageID, ReceiptHandle: d.Handle, Body: string(d.Body), EventSource: "aws:sqs"})
		}
	}
	return out
}

// Event is rec as an event source of batch size 1 invokes a function with.
func Event(t testing.TB, rec events.SQSMessage) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{rec}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Tick is a Scheduler tick scheduled at at (so that its shard messages are
// fresh when the test runs them).
func Tick(at time.Time) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"schedule_arn":"arn:aws:scheduler:us-east-1:123456789012:schedule/default/test",`+
		`"scheduled_time":%q,"execution_id":"fanouttest","attempt_number":"1"}`, at.UTC().Truncate(time.Second).Format(time.RFC3339)))
}
