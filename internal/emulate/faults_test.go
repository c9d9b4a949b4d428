package emulate_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/samtemplate"
	"github.com/berth-io/berth/internal/testenv"
)

// model reads the repository's template as the stack st runs it, so the
// tests find queues and tables by what the template says.
func (st *stack) model() *samtemplate.Stack {
	st.t.Helper()
	cfg, err := config.Load(st.cfgPath, func(string) (string, bool) { return "", false })
	if err != nil {
		st.t.Fatal(err)
	}
	m, _, err := emulate.LoadStack(templatePath, cfg, samtemplate.Options{StackName: st.name}, st.params)
	if err != nil {
		st.t.Fatal(err)
	}
	return m
}

func (st *stack) queueURL(name string) string {
	st.t.Helper()
	out, err := st.sqs.GetQueueUrl(st.t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		st.t.Fatalf("queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// receiveAll reads what arrives on a queue until want messages came or
// timeout passed.
func (st *stack) receiveAll(url string, want int, timeout time.Duration) []sqstypes.Message {
	st.t.Helper()
	var got []sqstypes.Message
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := st.sqs.ReceiveMessage(st.t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600})
		if err != nil {
			st.t.Fatal(err)
		}
		got = append(got, out.Messages...)
	}
	return got
}

// TestPoisonStreamRecord: an outbox record the dispatcher cannot decode
// is retried as the template's stream mapping says — bisected until it is
// alone, then given up to the on-failure destination — while the records
// around it are dispatched.
func TestPoisonStreamRecord(t *testing.T) {
	t.Parallel()
	st := start(t, setup{})
	model := st.model()
	if len(model.Streams) != 1 {
		t.Fatalf("the template has %d stream mappings, want 1 (the outbox's)", len(model.Streams))
	}
	sm := model.Streams[0]
	if sm.Settings.OnFailure == "" || !sm.Settings.Bisect || sm.Settings.MaxRetries < 0 {
		t.Fatalf("the stream mapping must bisect, bound its retries and name an on-failure destination: %+v", sm.Settings)
	}
	outbox := model.Tables[sm.Table].Name
	dest := st.queueURL(model.Queues[sm.Settings.OnFailure].Name)

	// The outbox item of a real create, to copy.
	id := st.create(aliceToken, "busybox", "")
	st.wait(aliceToken, id, "running", time.Minute)
	scan, err := st.ddb.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(outbox)})
	if err != nil || len(scan.Items) == 0 {
		t.Fatalf("outbox scan: %v (%d items)", err, len(scan.Items))
	}
	real := scan.Items[0]

	// The poison record (an outbox item without created_at) first, then
	// copies of the real item, in one transaction so that they reach the
	// stream together and share an invocation: the poison record fails
	// the batch from its start, which the mapping must bisect.
	poisonID := "poison-" + st.name
	writes := []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{TableName: aws.String(outbox), Item: map[string]ddbtypes.AttributeValue{
		"id": &ddbtypes.AttributeValueMemberS{Value: poisonID}, "instance_id": &ddbtypes.AttributeValueMemberS{Value: id},
		"op": &ddbtypes.AttributeValueMemberS{Value: "create"}, "state": &ddbtypes.AttributeValueMemberS{Value: "pending"},
		"created_key": &ddbtypes.AttributeValueMemberS{Value: "0"},
	}}}}
	var copies []string
	for range 6 {
		item := map[string]ddbtypes.AttributeValue{}
		for k, v := range real {
			item[k] = v
		}
		cid := container.NewID()
		item["id"] = &ddbtypes.AttributeValueMemberS{Value: cid}
		copies = append(copies, cid)
		writes = append(writes, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(outbox), Item: item}})
	}
	if _, err := st.ddb.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: writes}); err != nil {
		t.Fatal(err)
	}

	msgs := st.receiveAll(dest, 1, time.Minute)
	if len(msgs) != 1 {
		t.Fatalf("%d messages on the on-failure destination, want 1", len(msgs))
	}
	if more := st.receiveAll(dest, 1, 3*time.Second); len(more) != 0 {
		t.Errorf("more than one batch given up: %s", aws.ToString(more[0].Body))
	}
	var rec struct {
		RequestContext     struct{ Condition string }
		DDBStreamBatchInfo struct {
			StartSequenceNumber, EndSequenceNumber string
			BatchSize                              int
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(msgs[0].Body)), &rec); err != nil {
		t.Fatal(err)
	}
	// The poison record's own sequence number, read from the stream.
	reader, err := streampump.NewReader(t.Context(), streampump.NewLocalClient(testenv.DynamoDBEndpoint(t)), streamARN(t, st, outbox), streamtypes.ShardIteratorTypeTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := reader.Wait(t.Context(), 1000, 2*time.Second, 50*time.Millisecond)
	seq := ""
	for _, r := range recs {
		if id, ok := r.Change.NewImage["id"]; ok && r.EventName == "INSERT" && id.String() == poisonID {
			seq = r.Change.SequenceNumber
		}
	}
	info := rec.DDBStreamBatchInfo
	if seq == "" || info.BatchSize != 1 || info.StartSequenceNumber != seq || info.EndSequenceNumber != seq ||
		rec.RequestContext.Condition != "RetryAttemptsExhausted" {
		t.Errorf("given up: %+v, want the poison record (sequence %s) alone after its retries", rec, seq)
	}
	// The records around it were dispatched (a worker then finds their
	// instance running and acknowledges them).
	for _, cid := range copies {
		deadline := time.Now().Add(time.Minute)
		for {
			out, err := st.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(outbox),
				Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: cid}}})
			if err != nil {
				t.Fatal(err)
			}
			state, _ := out.Item["state"].(*ddbtypes.AttributeValueMemberS)
			if state != nil && state.Value != "pending" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("outbox item %s next to the poison record is still pending after a minute", cid)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	bisections := strings.Count(st.logs.String(), "bisecting a failed batch")
	if sm.Settings.BatchSize > 1 && bisections == 0 {
		t.Errorf("the poison record's batch was never bisected")
	}
	t.Logf("bisections: %d", bisections)
}

func streamARN(t *testing.T, st *stack, table string) string {
	out, err := st.ddb.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Table.LatestStreamArn)
}

// TestWorkerKilledMidCreate: the create worker's RIE process is killed
// while its container is being started; the message comes back after the
// queue's visibility timeout, a new instance adopts the container and the
// instance converges to running with exactly one container.
func TestWorkerKilledMidCreate(t *testing.T) {
	t.Parallel()
	var starts atomic.Int32
	proxy := dockerProxy(t, func(r *http.Request) (time.Duration, bool) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/start") && starts.Add(1) == 1 {
			return 30 * time.Second, false // the first start hangs until its caller is gone
		}
		return 0, false
	})
	const visibility = 6 * time.Second
	st := start(t, setup{dockerEndpoint: proxy, visibility: visibility})
	createdAt := time.Now()
	id := st.create(aliceToken, "busybox", "killed")
	deadline := time.Now().Add(time.Minute)
	for starts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no container start within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pids := st.functionPIDs(createWorker(t, st))
	if len(pids) == 0 {
		t.Fatal("no create worker instance")
	}
	// The whole execution environment dies: the RIE and the bootstrap it
	// runs (in a process group of its own).
	for _, pid := range pids {
		tree := emulate.Descendants(pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for _, c := range tree {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
	in := st.wait(aliceToken, id, "running", 2*time.Minute)
	// The message was received after the create was accepted, so it could
	// not come back before one visibility timeout from then.
	if took := time.Since(createdAt); took < visibility {
		t.Errorf("running %v after the create, before the message could come back (visibility %v)", took, visibility)
	}
	states, err := st.rt.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states[0].Ref.RuntimeID != in["runtime_id"] {
		t.Errorf("containers: %+v, want exactly the instance's %v", states, in["runtime_id"])
	}
	if n := len(st.functionPIDs(createWorker(t, st))); n < 2 {
		t.Errorf("%d create worker instances started, want a new one after the kill", n)
	}
}

// createWorker is the function the template maps to the create queue.
func createWorker(t *testing.T, st *stack) string {
	t.Helper()
	model := st.model()
	for _, m := range model.QueueMaps {
		if model.Queues[m.Queue].DeadLetter != "" && model.Functions[m.Function].ReservedConcurrency > 0 {
			return m.Function
		}
	}
	t.Fatal("the template maps no queue to a function with reserved concurrency (the create worker)")
	return ""
}

// TestAlwaysFailingWorker: every container create fails (the engine
// answers 500); after max_attempts deliveries the instance is failed with
// the reason, its admission slot is released, and the message is in the
// create queue's dead-letter queue.
func TestAlwaysFailingWorker(t *testing.T) {
	t.Parallel()
	proxy := dockerProxy(t, func(r *http.Request) (time.Duration, bool) {
		return 0, r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create")
	})
	st := start(t, setup{dockerEndpoint: proxy, visibility: 3 * time.Second,
		container: map[string]any{"max_attempts": 2, "create_queue_max_pending": 1}})
	id := st.create(aliceToken, "busybox", "doomed")
	in := st.wait(aliceToken, id, "failed", 2*time.Minute)
	if reason, _ := in["status_reason"].(string); !strings.Contains(reason, "create failed") {
		t.Errorf("status_reason %q does not say why", reason)
	}
	// The slot is free again: with max pending 1, a new create is admitted.
	if r := st.do(http.MethodPost, "/api/containers", aliceToken, map[string]any{"template": "busybox"}); r.status != http.StatusAccepted {
		t.Errorf("create after the failure: %d %s, want 202 (slot released)", r.status, r.body)
	}
	model := st.model()
	q := model.Queues[queueOf(t, model, createWorker(t, st))]
	if q.MaxReceiveCount != 2 {
		t.Errorf("maxReceiveCount %d, want max_attempts (2)", q.MaxReceiveCount)
	}
	dlq := st.queueURL(model.Queues[q.DeadLetter].Name)
	msgs := st.receiveAll(dlq, 1, time.Minute)
	if len(msgs) < 1 || !strings.Contains(aws.ToString(msgs[0].Body), id) {
		t.Fatalf("dead-letter queue: %d messages, want the create of %s", len(msgs), id)
	}
}

func queueOf(t *testing.T, model *samtemplate.Stack, fn string) string {
	for _, m := range model.QueueMaps {
		if m.Function == fn {
			return m.Queue
		}
	}
	t.Fatalf("no queue mapped to %s", fn)
	return ""
}

// TestExitNoticed: a container that exits by itself is seen as failed
// (non-zero exit) within one reconcile period of its exit, the bound the
// stack promises for the state loop on AWS.
func TestExitNoticed(t *testing.T) {
	const period = 4 * time.Second
	st := start(t, setup{scheduleEvery: period})
	st.putTemplate("exits", []string{"sh", "-c", "sleep 3; exit 3"})
	id := st.create(aliceToken, "exits", "")
	in := st.wait(aliceToken, id, "running", time.Minute)
	started, err := time.Parse(time.RFC3339Nano, in["started_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	in = st.wait(aliceToken, id, "failed", time.Minute)
	noticed := time.Now()
	exited := started.Add(3 * time.Second)
	// The bound: one period plus one pass (the longest reconciler
	// invocation of this run), and a second for this test's own polling.
	bound := period + longestInvocation(st.logs.String(), "ReconcilerFunction") + time.Second
	if lag := noticed.Sub(exited); lag > bound {
		t.Errorf("noticed %v after the exit, bound %v (period %v)", lag.Round(time.Millisecond), bound.Round(time.Millisecond), period)
	}
	if code, _ := in["exit_code"].(float64); code != 3 {
		t.Errorf("exit_code %v, want 3", in["exit_code"])
	}
}

// longestInvocation is the longest invocation of fn in the emulator's log.
func longestInvocation(logs, fn string) time.Duration {
	var longest time.Duration
	for _, l := range strings.Split(logs, "\n") {
		var rec struct {
			Msg      string
			Function string
			Duration float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "invoke" && rec.Function == fn {
			longest = max(longest, time.Duration(rec.Duration*float64(time.Millisecond)))
		}
	}
	return longest
}
