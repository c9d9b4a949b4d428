package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/wiring"
)

// fixtureQueues are the queue URLs of the default deployment, whose names
// the fixtures' eventSourceARNs end in.
var fixtureQueues = [2]string{"http://127.0.0.1:1/000000000000/berth-create", "http://127.0.0.1:1/000000000000/berth-lifecycle"}

func workerFixtures(t *testing.T) map[string]events.SQSEvent {
	t.Helper()
	files, err := filepath.Glob("../../events/worker-*.json")
	if err != nil || len(files) < 5 {
		t.Fatalf("want events/worker-{create,start,stop,delete,retried}.json, found %v (%v)", files, err)
	}
	out := map[string]events.SQSEvent{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = ev
	}
	return out
}

// TestFixtureRoundTrip keeps events/worker-*.json in the shape SQS gives
// Lambda: every field known to events.SQSEvent, the same JSON back, a body
// the worker decodes, and the queue its op goes to (creates on the create
// queue, the rest on the lifecycle queue).
func TestFixtureRoundTrip(t *testing.T) {
	for f := range workerFixtures(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ev := testenv.RoundTrip[events.SQSEvent](t, f, nil)
			if len(ev.Records) != 1 {
				t.Fatalf("%d records", len(ev.Records))
			}
			r := ev.Records[0]
			msg, err := outbox.Decode([]byte(r.Body))
			if err != nil {
				t.Fatalf("body: %v", err)
			}
			want := wiring.QueueName(fixtureQueues[1])
			if msg.Op == container.OpCreate {
				want = wiring.QueueName(fixtureQueues[0])
			}
			if got := wiring.QueueName(r.EventSourceARN); got != want {
				t.Errorf("a %s from queue %s, want %s", msg.Op, got, want)
			}
			if n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"]); err != nil || n < 1 {
				t.Errorf("ApproximateReceiveCount %q", r.Attributes["ApproximateReceiveCount"])
			}
		})
	}
}

// TestEveryOpHasAFixture: each operation a worker carries out
// (container.Ops: create, start, stop, delete and the four cleanups) has an
// events/worker-*.json fixture whose message asks for it, so the round trip
// and TestFixtureHandled cover it.
func TestEveryOpHasAFixture(t *testing.T) {
	have := map[container.Op]bool{}
	for _, ev := range workerFixtures(t) {
		for _, r := range ev.Records {
			if msg, err := outbox.Decode([]byte(r.Body)); err == nil {
				have[msg.Op] = true
			}
		}
	}
	for _, op := range container.Ops() {
		if !have[op] {
			t.Errorf("no events/worker-*.json fixture asks for %s", op)
		}
	}
}

// TestFixtureHandled feeds every fixture to the worker handler on DynamoDB
// Local: their outbox items do not exist (messages that outlived their
// items, a retried one included), so each record is acknowledged, not
// reported failed; a record that is not a berth message at all is
// acknowledged too (no retry can mend it).
func TestFixtureHandled(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	cfg := config.Default()
	cfg.Queue.CreateQueueURL, cfg.Queue.LifecycleQueueURL = fixtureQueues[0], fixtureQueues[1]
	fn, err := newFunction(cfg, st, engine(t), sqsqueue.NewLocalClient(testenv.SQSEndpoint(t)), nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for f, ev := range workerFixtures(t) {
		poison := ev.Records[0]
		poison.MessageId, poison.Body = "poison", "not json"
		ev.Records = append(ev.Records, poison)
		if resp := fn.handle(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
			t.Errorf("%s: failures reported: %+v", filepath.Base(f), resp.BatchItemFailures)
		}
	}
}
