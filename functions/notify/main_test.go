package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/wiring"
)

const fixture = "../../events/notify-deliver.json"

// TestFixture keeps events/notify-deliver.json in the shape SQS gives
// Lambda: every field known to events.SQSEvent, the same JSON back, a
// delivery's body, from a queue named like the notify queue.
func TestFixture(t *testing.T) {
	ev := testenv.RoundTrip[events.SQSEvent](t, fixture, nil)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records", len(ev.Records))
	}
	r := ev.Records[0]
	msg, err := outbox.Decode([]byte(r.Body))
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	if msg.Op != container.OpDeliver || outbox.QueueFor(msg.Op) != outbox.NotifyQueue {
		t.Errorf("the fixture's op %s goes to the %s queue; want a delivery, on the notify queue", msg.Op, outbox.QueueFor(msg.Op))
	}
	if got := wiring.QueueName(r.EventSourceARN); got != "berth-notify" {
		t.Errorf("the fixture comes from %s; want berth-notify", got)
	}
}

// TestSetupNeedsItsQueue: without BERTH_QUEUE_NOTIFY_QUEUE_URL the
// function does not start (it could not re-send a failed delivery).
func TestSetupNeedsItsQueue(t *testing.T) {
	env := map[string]string{"BERTH_STORE_TABLE_PREFIX": "x-", "AWS_REGION": "us-east-1"}
	_, err := setup(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil,
		slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "BERTH_QUEUE_NOTIFY_QUEUE_URL") {
		t.Errorf("setup without the notify queue: %v; want an error naming BERTH_QUEUE_NOTIFY_QUEUE_URL", err)
	}
}

// TestNotifyFunction, on DynamoDB Local, the SQS emulator and a real
// receiver, with the function built by its own setup from its
// environment: a delivery the receiver fails (500) is re-sent to the
// notify queue as a fresh delayed message (no batch item failure, so the
// queue's receive count is not spent), and delivered, signed, with the
// same webhook-id, when it comes back; a record that is not a delivery is
// handed back (for the dead-letter queue) and its instance left as it is.
func TestNotifyFunction(t *testing.T) {
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("ntf%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	sqsEndpoint := testenv.SQSEndpoint(t)
	sc := sqsqueue.NewLocalClient(sqsEndpoint)
	pair, err := sqsqueue.CreateWithDLQ(ctx, sc, prefix+"notify", sqsqueue.SetupOptions{VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), sc, pair) })
	for k, v := range map[string]string{
		"BERTH_STORE_TABLE_PREFIX":        prefix,
		"BERTH_QUEUE_NOTIFY_QUEUE_URL":    pair.URL,
		"BERTH_WEBHOOKS_ALLOWED_NETWORKS": "127.0.0.0/8",
		"AWS_ENDPOINT_URL_DYNAMODB":       testenv.DynamoDBEndpoint(t),
		"AWS_ENDPOINT_URL_SQS":            sqsEndpoint,
		"AWS_REGION":                      "us-east-1",
		"AWS_ACCESS_KEY_ID":               "local",
		"AWS_SECRET_ACCESS_KEY":           "local",
	} {
		t.Setenv(k, v) // the SDK's default chain reads the process environment
	}
	quiet := slog.New(slog.DiscardHandler)
	fn, err := setup(ctx, os.LookupEnv, os.Environ(), quiet)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	guard, err := webhook.NewGuard([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	m := manager.New(manager.Options{Store: st, Runtimes: []string{"docker"}, Logger: quiet, Webhooks: guard})
	rcv := webhooktest.NewReceiver(t)
	sub, err := m.CreateWebhook(ctx, identity.Caller{User: "alice"}, manager.WebhookRequest{URL: rcv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	rcv.SetSecret("", sub.Secret)
	inst, err := st.CreateInstance(ctx, storetest.NewCreate(storetest.NewClock(), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	managertest.Move(t, m, identity.Caller{User: "alice"}, inst.ID, fsm.Creating)
	items, err := st.ListUndispatched(ctx, time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var delivery, create container.OutboxItem
	for _, it := range items {
		switch {
		case it.InstanceID != inst.ID:
		case it.Op == container.OpDeliver && it.Delivery != nil && it.Delivery.WebhookID == sub.ID:
			delivery = it
		case it.Op == container.OpCreate:
			create = it
		}
	}
	if delivery.ID == "" || create.ID == "" {
		t.Fatalf("outbox items of the instance: %+v; want its create and a delivery to %s", items, sub.ID)
	}
	record := func(id string, it container.OutboxItem) events.SQSMessage {
		body, err := outbox.FromItem(it).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return events.SQSMessage{MessageId: id, Body: string(body), ReceiptHandle: "rh-" + id,
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + prefix + "notify",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"}}
	}

	rcv.Answer(http.StatusInternalServerError)
	if resp := fn.handle(ctx, events.SQSEvent{Records: []events.SQSMessage{record("m1", delivery)}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("a failed attempt was handed back (spending a receive): %+v; want it re-sent", resp.BatchItemFailures)
	}
	// The re-sent message, from the real queue, after its backoff delay.
	q := sqsqueue.New(sc, pair.URL)
	var again []queue.Delivery
	deadline := time.Now().Add(60 * time.Second)
	for len(again) == 0 && time.Now().Before(deadline) {
		if again, err = q.Receive(ctx, 1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(again) != 1 {
		t.Fatal("the failed delivery was not re-sent to the notify queue within 60 s")
	}
	msg, err := outbox.Decode(again[0].Body)
	if err != nil || msg.OutboxID != delivery.ID || msg.Unavailable == nil || msg.Unavailable.Retries != 1 {
		t.Fatalf("re-sent message %+v (%v); want the delivery's, one retry on", msg, err)
	}
	rcv.Answer(http.StatusNoContent)
	rec := events.SQSMessage{MessageId: again[0].MessageID, Body: string(again[0].Body), ReceiptHandle: again[0].Handle,
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + prefix + "notify", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	if resp := fn.handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry failed: %+v", resp.BatchItemFailures)
	}
	if it, err := st.GetOutbox(ctx, delivery.ID); err != nil || it.State != container.OutboxDone {
		t.Errorf("delivery item %+v (%v); want done", it, err)
	}
	if got := rcv.Received(); len(got) != 2 || got[0].ID != delivery.ID || got[1].ID != delivery.ID {
		t.Errorf("the receiver got webhook-ids %v; want %s twice (500, then 204)", got, delivery.ID)
	}

	// A create on the notify queue is misrouted: handed back, untouched.
	resp := fn.handle(ctx, events.SQSEvent{Records: []events.SQSMessage{record("m2", create)}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Errorf("a create on the notify queue: failures %+v; want it handed back", resp.BatchItemFailures)
	}
	if got, err := st.GetInstance(ctx, inst.ID); err != nil || got.Status != fsm.Creating {
		t.Errorf("after a misrouted create the instance is %s (%v); want it left creating", got.Status, err)
	}
	if n := len(rcv.Received()); n != 2 {
		t.Errorf("the receiver got %d requests; want still 2", n)
	}
}
