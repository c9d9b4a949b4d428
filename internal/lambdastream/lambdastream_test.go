package lambdastream_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/outbox/outboxtest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

var envSeq atomic.Int64

// streamEnv is the AWS request loop's dispatch leg on the real parts:
// dynamostore on DynamoDB Local, the outbox table's stream read with the
// dynamodbstreams client, the handler, and two queues on the SQS emulator.
type streamEnv struct {
	store     *dynamostore.Store
	table     string
	reader    *streampump.Reader
	streams   *dynamodbstreams.Client
	arn       string
	create    *sqsqueue.Queue
	lifecycle *sqsqueue.Queue
	handler   *lambdastream.Handler
}

func newStreamEnv(t *testing.T) *streamEnv {
	t.Helper()
	ddb := teststores.DynamoClient(t)
	sqsEndpoint := testenv.SQSEndpoint(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("ob%d-%d-", time.Now().UnixNano()%1e9, envSeq.Add(1))
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatalf("EnsureTables: %v", err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	e := &streamEnv{
		store: dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix}),
		table: dynamostore.TableName(prefix, dynamostore.TableOutbox),
	}
	arn, err := streampump.StreamARN(ctx, ddb, e.table)
	if err != nil {
		t.Fatal(err)
	}
	e.arn = arn
	e.streams = streampump.NewLocalClient(testenv.DynamoDBEndpoint(t))
	if e.reader, err = streampump.NewReader(ctx, e.streams, arn, streamtypes.ShardIteratorTypeTrimHorizon); err != nil {
		t.Fatal(err)
	}
	sc := sqsqueue.NewLocalClient(sqsEndpoint)
	e.create = sqsQueue(t, sc, prefix+"create")
	e.lifecycle = sqsQueue(t, sc, prefix+"lifecycle")
	e.handler = &lambdastream.Handler{
		Dispatcher: &outbox.Dispatcher{
			Queues: map[outbox.QueueName]queue.Queue{outbox.CreateQueue: e.create, outbox.LifecycleQueue: e.lifecycle},
			Store:  e.store,
		},
		OutboxTable: e.table,
	}
	return e
}

func sqsQueue(t *testing.T, c *sqs.Client, name string) *sqsqueue.Queue {
	t.Helper()
	ctx := context.Background()
	p, err := sqsqueue.CreateWithDLQ(ctx, c, name, sqsqueue.SetupOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), c, p) })
	return sqsqueue.New(c, p.URL)
}

// records waits for n stream records.
func (e *streamEnv) records(t *testing.T, n int) []events.DynamoDBEventRecord {
	t.Helper()
	recs, err := e.reader.Wait(context.Background(), n, 10*time.Second, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d stream records, want %d", len(recs), n)
	}
	return recs
}

func (e *streamEnv) handle(t *testing.T, recs ...events.DynamoDBEventRecord) []string {
	t.Helper()
	resp, err := e.handler.Handle(context.Background(), streampump.Event(recs...))
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	var seqs []string
	for _, f := range resp.BatchItemFailures {
		seqs = append(seqs, f.ItemIdentifier)
	}
	return seqs
}

// receiveAll reads messages from q until n came or wait passed.
func receiveAll(t *testing.T, q queue.Queue, n int, wait time.Duration) []queue.Delivery {
	t.Helper()
	var out []queue.Delivery
	deadline := time.Now().Add(wait)
	for len(out) < n && time.Now().Before(deadline) {
		ds, err := q.Receive(context.Background(), queue.MaxBatch, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ds...)
	}
	return out
}

func TestStreamHandlerOnDynamoDBLocal(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	it := storetest.CommitCreate(t, e.store, time.Now())

	recs := e.records(t, 1)
	r := recs[0]
	if r.EventName != "INSERT" || lambdastream.TableFromARN(r.EventSourceArn) != e.table {
		t.Fatalf("stream record %s on %s, want an INSERT on %s", r.EventName, r.EventSourceArn, e.table)
	}
	if failed := e.handle(t, r); len(failed) != 0 {
		t.Fatalf("batch item failures %v", failed)
	}
	ds := receiveAll(t, e.create, 1, 10*time.Second)
	if len(ds) != 1 {
		t.Fatalf("%d messages on the create queue, want 1", len(ds))
	}
	m := outboxtest.Decode(t, ds[0])
	want := outbox.FromItem(it)
	if m.OutboxID != want.OutboxID || m.InstanceID != want.InstanceID || m.Op != container.OpCreate ||
		m.InstanceVersion != want.InstanceVersion || m.RequestID != want.RequestID || !m.CommittedAt.Equal(want.CommittedAt) {
		t.Errorf("message %+v, want %+v", m, want)
	}
	if ds[0].Attributes[outbox.AttrOutboxID] != it.ID || ds[0].Attributes[outbox.AttrOp] != "create" {
		t.Errorf("attributes %v", ds[0].Attributes)
	}
	if got := storetest.GetOutbox(t, e.store, it.ID); got.State != container.OutboxDispatched {
		t.Errorf("item state %s after the handler, want dispatched", got.State)
	}

	// MarkDispatched made a MODIFY record: ignored.
	mod := e.records(t, 1)[0]
	if mod.EventName != "MODIFY" {
		t.Fatalf("second record %s, want the MODIFY of MarkDispatched", mod.EventName)
	}
	if failed := e.handle(t, mod); len(failed) != 0 {
		t.Errorf("a MODIFY was reported failed: %v", failed)
	}

	// Duplicate delivery of the INSERT: a second message for the same item,
	// which is harmless (the worker drops it once the item is done).
	if failed := e.handle(t, r); len(failed) != 0 {
		t.Fatalf("batch item failures on redelivery %v", failed)
	}
	ds2 := receiveAll(t, e.create, 1, 10*time.Second)
	if len(ds2) != 1 || outboxtest.Decode(t, ds2[0]).OutboxID != it.ID || ds2[0].MessageID == ds[0].MessageID {
		t.Errorf("redelivery: %d messages, want a second message for outbox item %s", len(ds2), it.ID)
	}
	for _, d := range append(ds, ds2...) {
		_ = e.create.Ack(ctx, d)
	}

	// A record of another table's stream is ignored.
	other := r
	other.EventSourceArn = strings.Replace(r.EventSourceArn, e.table, e.table+"-other", 1)
	if failed := e.handle(t, other); len(failed) != 0 {
		t.Errorf("a record of another table was reported failed: %v", failed)
	}
	if ds := receiveAll(t, e.create, 1, time.Second); len(ds) != 0 {
		t.Errorf("a record of another table was dispatched")
	}
}

func TestStreamHandlerPoisonRecord(t *testing.T) {
	e := newStreamEnv(t)
	var items []container.OutboxItem
	for range 3 {
		items = append(items, storetest.CommitCreate(t, e.store, time.Now()))
	}
	recs := e.records(t, 3)
	// The middle record's image lost its op: it can never be decoded.
	poison := recs[1]
	poison.Change.NewImage = maps.Clone(poison.Change.NewImage)
	delete(poison.Change.NewImage, "op")

	failed := e.handle(t, recs[0], poison, recs[2])
	if len(failed) != 1 || failed[0] != recs[1].Change.SequenceNumber {
		t.Fatalf("batch item failures %v, want only the poison record's %s", failed, recs[1].Change.SequenceNumber)
	}
	got := map[string]bool{}
	for _, d := range receiveAll(t, e.create, 2, 10*time.Second) {
		got[outboxtest.Decode(t, d).OutboxID] = true
	}
	if !got[items[0].ID] || !got[items[2].ID] || len(got) != 2 {
		t.Errorf("dispatched %v, want the two good items", got)
	}
	if st := storetest.GetOutbox(t, e.store, items[1].ID).State; st != container.OutboxPending {
		t.Errorf("the poison record's item is %s, want still pending (for the sweep)", st)
	}
}

// failIDs fails the sends of chosen entries, wrapped around a real queue.
type failIDs struct {
	queue.Queue
	ids map[string]bool
}

func (f failIDs) Send(ctx context.Context, msgs []queue.Outgoing) error {
	var keep []queue.Outgoing
	be := &queue.BatchError{Failed: map[string]error{}}
	for _, m := range msgs {
		if f.ids[m.ID] {
			be.Failed[m.ID] = errors.New("injected send failure")
			continue
		}
		keep = append(keep, m)
	}
	if err := f.Queue.Send(ctx, keep); err != nil {
		return err
	}
	if len(be.Failed) > 0 {
		return be
	}
	return nil
}

func TestStreamHandlerReportsFailedSends(t *testing.T) {
	e := newStreamEnv(t)
	a := storetest.CommitCreate(t, e.store, time.Now())
	b := storetest.CommitCreate(t, e.store, time.Now())
	stop := storetest.CommitRequest(t, e.store, container.OpStop) // a create and a stop
	recs := e.records(t, 4)
	e.handler.Dispatcher.Queues[outbox.CreateQueue] = failIDs{Queue: e.create, ids: map[string]bool{b.ID: true}}
	failed := e.handle(t, recs...)
	var bSeq string
	for _, r := range recs {
		if r.Change.NewImage["id"].String() == b.ID {
			bSeq = r.Change.SequenceNumber
		}
	}
	if len(failed) != 1 || failed[0] != bSeq {
		t.Fatalf("batch item failures %v, want b's record %s", failed, bSeq)
	}
	if st := storetest.GetOutbox(t, e.store, b.ID).State; st != container.OutboxPending {
		t.Errorf("b is %s after a failed send, want pending", st)
	}
	for _, id := range []string{a.ID, stop.ID} {
		if st := storetest.GetOutbox(t, e.store, id).State; st != container.OutboxDispatched {
			t.Errorf("item %s is %s, want dispatched", id, st)
		}
	}
	if ds := receiveAll(t, e.lifecycle, 1, 10*time.Second); len(ds) != 1 || outboxtest.Decode(t, ds[0]).OutboxID != stop.ID {
		t.Errorf("lifecycle queue: %d messages, want the stop", len(ds))
	}
}

// TestLatencyThroughStream measures commit → message received on the AWS
// path as far as it runs here: dynamostore on DynamoDB Local, its stream
// polled with GetRecords by streampump.Pump (every 25 ms when idle, where a
// Lambda event source mapping polls about every 250 ms), the handler, the
// SQS emulator, and a consumer long-polling it. It logs the medians; nothing
// is asserted on them.
func TestLatencyThroughStream(t *testing.T) {
	e := newStreamEnv(t)
	var handlerAt sync.Map // outbox id → time the handler got its record
	const pollInterval = 25 * time.Millisecond
	pump := &streampump.Pump{
		Reader:       e.reader,
		PollInterval: pollInterval,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			now := time.Now()
			for _, r := range ev.Records {
				if r.EventName == "INSERT" {
					handlerAt.LoadOrStore(r.Change.NewImage["id"].String(), now)
				}
			}
			return e.handler.Handle(ctx, ev)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pump.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pump: %v", err)
		}
	}()
	const n = 30
	var toHandler, toReceived []time.Duration
	for range n {
		// Commit at a random point of the pump's poll cycle, as independent
		// requests do, rather than in step with it.
		time.Sleep(time.Duration(rand.Int64N(int64(2 * pollInterval))))
		p := storetest.CreateAt(time.Now())
		if _, err := e.store.CreateInstance(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		ds, err := e.create.Receive(context.Background(), 1, 10*time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("Receive: %d, %v", len(ds), err)
		}
		got := time.Now()
		if id := outboxtest.Decode(t, ds[0]).OutboxID; id != p.Outbox.ID {
			t.Fatalf("message for %s, want %s", id, p.Outbox.ID)
		}
		_ = e.create.Ack(context.Background(), ds[0])
		toReceived = append(toReceived, got.Sub(committed))
		if at, ok := handlerAt.Load(p.Outbox.ID); ok {
			toHandler = append(toHandler, at.(time.Time).Sub(committed))
		}
	}
	t.Logf("stream dispatch latency over %d creates: median %s commit → message received (median %s commit → handler invoked); %d handler invocations",
		n, testenv.Median(toReceived), testenv.Median(toHandler), pump.Invocations())
}
