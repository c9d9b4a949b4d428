package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite events/dispatcher-*.json from DynamoDB Local's stream")

// eventsDir holds the sample events.
const eventsDir = "../../events"

// The fixtures are for the default deployment (table prefix "berth-").
const (
	fixtureTable = "berth-outbox"
	fixtureARN   = "arn:aws:dynamodb:us-east-1:123456789012:table/berth-outbox/stream/2026-11-29T00:00:00.000"
)

func TestMain(m *testing.M) {
	flag.Parse()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

func fixtureEvent(t testing.TB, name string) events.DynamoDBEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eventsDir, "dispatcher-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("dispatcher-%s.json: %v", name, err)
	}
	return ev
}

// TestFixturesRoundTrip keeps the fixtures in the shape Lambda delivers:
// each decodes into events.DynamoDBEvent with every field known and encodes
// back to the same JSON.
func TestFixturesRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(eventsDir, "dispatcher-*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want events/dispatcher-*.json fixtures, found %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ev := testenv.RoundTrip[events.DynamoDBEvent](t, f, nil)
			for _, r := range ev.Records {
				if lambdastream.TableFromARN(r.EventSourceArn) != fixtureTable {
					t.Errorf("record %s: eventSourceARN %q is not the default outbox table's stream", r.EventID, r.EventSourceArn)
				}
			}
		})
	}
}

// fixtureHandler is the function's handler for the default prefix, on
// in-process queues and an empty store (MarkDispatched of the fixture's
// unknown item is logged and ignored, as the dispatcher does).
func fixtureHandler(t *testing.T) (*lambdastream.Handler, *memqueue.Queue, *memqueue.Queue) {
	cq := memqueue.New(memqueue.Options{Name: "create"})
	lq := memqueue.New(memqueue.Options{Name: "lifecycle"})
	t.Cleanup(func() { _ = cq.Close(); _ = lq.Close() })
	h := &lambdastream.Handler{
		Dispatcher: &outbox.Dispatcher{
			Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: cq, outbox.LifecycleQueue: lq},
			Store:  teststores.Bolt(t, nil),
		},
		OutboxTable: fixtureTable,
	}
	return h, cq, lq
}

func TestInsertFixture(t *testing.T) {
	h, cq, lq := fixtureHandler(t)
	ev := fixtureEvent(t, "insert")
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	ds, _ := cq.Receive(context.Background(), 10, 0)
	if len(ds) != 1 {
		t.Fatalf("%d messages on the create queue, want 1", len(ds))
	}
	m, err := outbox.Decode(ds[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	img := ev.Records[0].Change.NewImage
	if m.OutboxID != img["id"].String() || m.InstanceID != img["instance_id"].String() || m.Op != container.OpCreate {
		t.Errorf("message %+v from image %v", m, img)
	}
	if s := lq.Stats(); s.Total() != 0 {
		t.Errorf("a create reached the lifecycle queue")
	}
}

func TestModifyFixtureIsIgnored(t *testing.T) {
	h, cq, lq := fixtureHandler(t)
	resp, err := h.Handle(context.Background(), fixtureEvent(t, "modify"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	if cq.Stats().Total()+lq.Stats().Total() != 0 {
		t.Error("a MODIFY record was dispatched")
	}
}

// TestSetupOnLocalServices builds the function as main does, from the
// environment, against DynamoDB Local and the SQS emulator, and runs a
// real stream record through it.
func TestSetupOnLocalServices(t *testing.T) {
	ddbEndpoint := testenv.DynamoDBEndpoint(t)
	sqsEndpoint := testenv.SQSEndpoint(t)
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("fd%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	sc := sqsqueue.NewLocalClient(sqsEndpoint)
	var urls []string
	for _, name := range []string{"create", "lifecycle"} {
		p, err := sqsqueue.CreateWithDLQ(ctx, sc, prefix+name, sqsqueue.SetupOptions{VisibilityTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), sc, p) })
		urls = append(urls, p.URL)
	}
	vars := map[string]string{
		"BERTH_STORE_TABLE_PREFIX":        prefix,
		"BERTH_QUEUE_CREATE_QUEUE_URL":    urls[0],
		"BERTH_QUEUE_LIFECYCLE_QUEUE_URL": urls[1],
		"AWS_ENDPOINT_URL_DYNAMODB":       ddbEndpoint,
		"AWS_ENDPOINT_URL_SQS":            sqsEndpoint,
		"AWS_REGION":                      "us-east-1",
		"AWS_ACCESS_KEY_ID":               "local",
		"AWS_SECRET_ACCESS_KEY":           "local",
	}
	for k, v := range vars {
		t.Setenv(k, v) // the SDK's default chain reads the process environment
	}
	h, err := setup(ctx, os.LookupEnv, os.Environ(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	if h.OutboxTable != prefix+"outbox" {
		t.Errorf("outbox table %q", h.OutboxTable)
	}

	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	arn, err := streampump.StreamARN(ctx, ddb, prefix+"outbox")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := streampump.NewReader(ctx, streampump.NewLocalClient(ddbEndpoint), arn, streamtypes.ShardIteratorTypeTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	p := storetest.NewCreate(storetest.NewClock(), "alice")
	if _, err := st.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}
	recs, err := reader.Wait(ctx, 1, 10*time.Second, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(ctx, streampump.Event(recs...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	ds, err := sqsqueue.New(sc, urls[0]).Receive(ctx, 1, 5*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive from the create queue: %d, %v", len(ds), err)
	}
	if m, err := outbox.Decode(ds[0].Body); err != nil || m.OutboxID != p.Outbox.ID {
		t.Errorf("message %s (%v), want outbox item %s", ds[0].Body, err, p.Outbox.ID)
	}
	if it, err := st.GetOutbox(ctx, p.Outbox.ID); err != nil || it.State != container.OutboxDispatched {
		t.Errorf("outbox item after dispatch: %+v, %v", it, err)
	}
}

func TestSetupRefusesIncompleteConfig(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"no queue URLs":    {"BERTH_STORE_TABLE_PREFIX": "berth-"},
		"one queue URL":    {"BERTH_QUEUE_CREATE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/c"},
		"memory queue":     {"BERTH_QUEUE_BACKEND": "memory"},
		"bolt store":       {"BERTH_STORE_BACKEND": "bolt"},
		"same queue twice": {"BERTH_QUEUE_CREATE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q"},
	} {
		t.Run(name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
			if _, err := setup(context.Background(), env, nil, slog.New(slog.DiscardHandler)); err == nil {
				t.Error("setup accepted it")
			}
		})
	}
}

// TestFixturesMatchTheRealStream makes the records DynamoDB Local's real
// stream gives for an outbox INSERT and MODIFY, and checks that the
// committed events/dispatcher-*.json have their shape (event name, keys and
// attribute names of both images), so the fixtures cannot drift from what
// the store writes. With -update it rewrites them instead:
//
//	go test ./functions/dispatcher -run TestFixturesMatchTheRealStream -update
func TestFixturesMatchTheRealStream(t *testing.T) {
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("fx%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	arn, err := streampump.StreamARN(ctx, ddb, prefix+"outbox")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := streampump.NewReader(ctx, streampump.NewLocalClient(testenv.DynamoDBEndpoint(t)), arn, streamtypes.ShardIteratorTypeTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	p := storetest.NewCreate(storetest.NewClock(), "alice")
	p.Outbox.RequestID = "req-fixture"
	if _, err := st.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkDispatched(ctx, p.Outbox.ID, p.Outbox.CreatedAt.Add(40*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	recs, err := reader.Wait(ctx, 2, 10*time.Second, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"insert", "modify"} {
		r := recs[i]
		if r.EventName != strings.ToUpper(name) {
			t.Fatalf("record %d is %s, want %s", i, r.EventName, strings.ToUpper(name))
		}
		r.EventSourceArn = fixtureARN
		r.AWSRegion = "us-east-1"
		raw, err := json.MarshalIndent(streampump.Event(r), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(eventsDir, "dispatcher-"+name+".json")
		if *update {
			if err := os.WriteFile(f, append(raw, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", f)
			continue
		}
		committed, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want events.DynamoDBEvent
		if err := json.Unmarshal(committed, &want); err != nil || len(want.Records) != 1 {
			t.Fatalf("%s: %v", f, err)
		}
		if got, exp := recordShape(r), recordShape(want.Records[0]); !reflect.DeepEqual(got, exp) {
			t.Errorf("%s has drifted from the real stream (rerun with -update):\n got %v\nfile %v", f, got, exp)
		}
	}
}

// recordShape is what a fixture must share with a real record: the event
// name and the attribute names (with their types) of keys and images.
func recordShape(r events.DynamoDBEventRecord) map[string][]string {
	shape := map[string][]string{"event": {r.EventName}}
	for part, attrs := range map[string]map[string]events.DynamoDBAttributeValue{
		"keys": r.Change.Keys, "new": r.Change.NewImage, "old": r.Change.OldImage,
	} {
		for name, v := range attrs {
			shape[part] = append(shape[part], fmt.Sprintf("%s:%d", name, v.DataType()))
		}
		slices.Sort(shape[part])
	}
	return shape
}

var _ store.OutboxStore = (*dynamostore.Store)(nil)

// TestInsertBatchFixture: a batch of INSERTs (a create, a stop, a delete)
// goes out in one invocation, each to its queue, every record in the real
// stream's shape (that of dispatcher-insert.json, which is checked against
// DynamoDB Local).
func TestInsertBatchFixture(t *testing.T) {
	h, cq, lq := fixtureHandler(t)
	ev := fixtureEvent(t, "insert-batch")
	shape := recordShape(fixtureEvent(t, "insert").Records[0])
	for _, r := range ev.Records {
		if !reflect.DeepEqual(recordShape(r), shape) {
			t.Errorf("record %s is not in the shape of a real outbox INSERT", r.EventID)
		}
	}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	ops := map[container.Op]string{}
	for _, q := range []*memqueue.Queue{cq, lq} {
		ds, _ := q.Receive(context.Background(), 10, 0)
		for _, d := range ds {
			m, err := outbox.Decode(d.Body)
			if err != nil {
				t.Fatal(err)
			}
			ops[m.Op] = q.Name()
		}
	}
	if want := map[container.Op]string{container.OpCreate: "create", container.OpStop: "lifecycle", container.OpDelete: "lifecycle"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("dispatched %v, want %v", ops, want)
	}
}

// TestPoisonFixture: a record no decoder can read is reported alone; the
// good record beside it is dispatched.
func TestPoisonFixture(t *testing.T) {
	h, cq, _ := fixtureHandler(t)
	ev := fixtureEvent(t, "poison")
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[1].Change.SequenceNumber {
		t.Fatalf("failures %+v, want only the poison record %s", resp.BatchItemFailures, ev.Records[1].Change.SequenceNumber)
	}
	if ds, _ := cq.Receive(context.Background(), 10, 0); len(ds) != 1 {
		t.Errorf("%d messages on the create queue, want the good record's", len(ds))
	}
}
