package streampump_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestAttributeConversions: streams API → aws-lambda-go (streampump) →
// DynamoDB API (lambdastream.FromEventAttributes) gives what the SDK's own
// streams → DynamoDB conversion gives, for every attribute type.
func TestAttributeConversions(t *testing.T) {
	in := map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "text ✓"},
		"n":    &types.AttributeValueMemberN{Value: "-12.5e3"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 255}},
		"bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberN{Value: "1"}}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberBOOL{Value: false}}},
	}
	want, err := attributevalue.FromDynamoDBStreamsMap(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lambdastream.FromEventAttributes(streampump.Attributes(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("converted\n%#v\nwant\n%#v", got, want)
	}
}

// TestPumpRetriesLikeAnEventSourceMapping checks Pump's partial failure
// rule on DynamoDB Local's stream: a failed record is retried with the
// records after it, and given up after MaxRetries.
func TestPumpRetriesLikeAnEventSourceMapping(t *testing.T) {
	ddb := teststores.DynamoClient(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("st%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	arn, err := streampump.StreamARN(ctx, ddb, prefix+"outbox")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := streampump.NewReader(ctx, streampump.NewLocalClient(testenv.DynamoDBEndpoint(t)), arn, types.ShardIteratorTypeTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock()
	var ids []string
	for range 4 {
		p := storetest.NewCreate(clock, "alice")
		if _, err := st.CreateInstance(ctx, p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Outbox.ID)
	}
	// Record 1 fails twice then succeeds; record 3 always fails (poison).
	var (
		mu      sync.Mutex
		batches [][]int
		fails   = map[int]int{1: 2, 3: 1 << 30}
		gaveUp  []int
		handled = map[int]bool{}
	)
	index := func(r events.DynamoDBEventRecord) int {
		for i, id := range ids {
			if r.Change.NewImage["id"].String() == id {
				return i
			}
		}
		return -1
	}
	pump := &streampump.Pump{
		Reader:       reader,
		MaxRetries:   2,
		RetryBackoff: time.Millisecond,
		PollInterval: 5 * time.Millisecond,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			var b []int
			var resp events.DynamoDBEventResponse
			for _, r := range ev.Records {
				i := index(r)
				b = append(b, i)
				if fails[i] > 0 {
					fails[i]--
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
				} else {
					handled[i] = true
				}
			}
			batches = append(batches, b)
			return resp, nil
		},
		OnGiveUp: func(r events.DynamoDBEventRecord) {
			mu.Lock()
			defer mu.Unlock()
			gaveUp = append(gaveUp, index(r))
		},
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pump.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		finished := len(gaveUp) == 1 && len(handled) == 3
		mu.Unlock()
		if finished || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Record 3 first leads a failure in the third batch; with MaxRetries 2
	// it is tried twice more on its own, then given up.
	want := [][]int{{0, 1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {3}, {3}}
	if !reflect.DeepEqual(batches, want) || !reflect.DeepEqual(gaveUp, []int{3}) {
		t.Errorf("batches %v, given up %v; want %v and [3]", batches, gaveUp, want)
	}
}
