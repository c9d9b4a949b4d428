package emulate_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestChaosTransactionConflictWireFormat: the chaos proxy's
// TransactionConflict cancellation is read by the AWS SDK as DynamoDB's
// own: a TransactionCanceledException with one reason per item, the picked
// item's "TransactionConflict" and "None" for the others.
func TestChaosTransactionConflictWireFormat(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := io.ReadAll(r.Body)
		body, ok := transactionConflict(req, 4)
		if !ok {
			http.Error(w, "no items", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("berth", "test", ""),
		RetryMaxAttempts: 1,
	})
	put := func(k string) ddbtypes.TransactWriteItem {
		return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String("t"),
			Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: k}}}}
	}
	_, err := client.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{put("a"), put("b"), put("c")}})
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("error %v (%T), want a TransactionCanceledException", err, err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if want := []string{"None", "TransactionConflict", "None"}; len(codes) != 3 || codes[0] != want[0] || codes[1] != want[1] || codes[2] != want[2] {
		t.Errorf("cancellation reasons %v, want %v", codes, want)
	}
	if _, ok := transactionConflict([]byte(`{"TransactItems":[]}`), 1); ok {
		t.Errorf("a transaction without items was answered with a conflict")
	}
}

// TestChaosReorderKeepsTheSendersDelay: the chaos proxy's reordering holds
// a message back beyond its sender's own delay, never short of it (SQS
// never delivers a message before its DelaySeconds), per message of a
// batch, within SQS's 900 s limit.
func TestChaosReorderKeepsTheSendersDelay(t *testing.T) {
	for _, tc := range []struct {
		name, action, body string
		want               []int
	}{
		{"no delay of its own", "SendMessage", `{"QueueUrl":"q","MessageBody":"m"}`, []int{2}},
		{"a backoff of 60 s", "SendMessage", `{"QueueUrl":"q","MessageBody":"m","DelaySeconds":60}`, []int{62}},
		{"near the limit", "SendMessage", `{"QueueUrl":"q","MessageBody":"m","DelaySeconds":899}`, []int{900}},
		{"a batch", "SendMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"m"},{"Id":"b","MessageBody":"m","DelaySeconds":30}]}`, []int{2, 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out struct {
				DelaySeconds *int
				Entries      []struct{ DelaySeconds int }
			}
			if err := json.Unmarshal(delayed([]byte(tc.body), tc.action, 2), &out); err != nil {
				t.Fatal(err)
			}
			var got []int
			if tc.action == "SendMessage" && out.DelaySeconds != nil {
				got = append(got, *out.DelaySeconds)
			}
			for _, e := range out.Entries {
				got = append(got, e.DelaySeconds)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("delays %v, want %v", got, tc.want)
			}
		})
	}
}
