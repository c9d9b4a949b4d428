package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

const workerFixture = "../../events/worker-create.json"

// TestFixtureRoundTrip keeps events/worker-create.json in the shape SQS
// gives Lambda: every field known to events.SQSEvent, the same JSON back,
// and a body the worker decodes.
func TestFixtureRoundTrip(t *testing.T) {
	ev := testenv.RoundTrip[events.SQSEvent](t, workerFixture, nil)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records", len(ev.Records))
	}
	msg, err := outbox.Decode([]byte(ev.Records[0].Body))
	if err != nil || msg.Op != "create" {
		t.Fatalf("body: %+v, %v", msg, err)
	}
}

// TestFixtureHandled feeds the fixture to the worker handler on DynamoDB
// Local: its outbox item does not exist (a message that outlived its item),
// so the record is acknowledged, not reported failed; a record that is not
// a berth message at all is acknowledged too (no retry can mend it).
func TestFixtureHandled(t *testing.T) {
	raw, err := os.ReadFile(workerFixture)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	poison := ev.Records[0]
	poison.MessageId, poison.Body = "poison", "not json"
	ev.Records = append(ev.Records, poison)
	st := teststores.Dynamo(t, time.Now)
	cfg := config.Default()
	cfg.Queue.CreateQueueURL, cfg.Queue.LifecycleQueueURL = "http://127.0.0.1:1/000000000000/berth-create", "http://127.0.0.1:1/000000000000/berth-lifecycle"
	fn, err := newFunction(cfg, st, engine(t), sqsqueue.NewLocalClient(testenv.SQSEndpoint(t)), nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if resp := fn.handle(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures reported: %+v", resp.BatchItemFailures)
	}
}
