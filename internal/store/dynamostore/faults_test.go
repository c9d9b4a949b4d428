package dynamostore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/testenv"
)

// faults wraps the HTTP transport to DynamoDB Local and lets a test answer
// chosen requests itself, to reproduce what Local never does (transaction
// conflicts, throttling, a reply lost after the commit).
type faults struct {
	base http.RoundTripper
	mu   sync.Mutex
	// fault is called for every request with the operation name and body;
	// it returns a reply to send instead, or nil to pass the request on.
	// sent reports whether the request should still reach Local first.
	fault func(op string, body []byte) (reply *http.Response, sent bool)
	// tokens collects the ClientRequestToken of every TransactWriteItems.
	tokens []string
}

func (f *faults) RoundTrip(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	f.mu.Lock()
	if op == "TransactWriteItems" {
		var in struct{ ClientRequestToken string }
		_ = json.Unmarshal(body, &in)
		f.tokens = append(f.tokens, in.ClientRequestToken)
	}
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		if reply, sent := fault(op, body); reply != nil {
			if sent {
				resp, err := f.base.RoundTrip(req)
				if err != nil {
					return nil, err
				}
				resp.Body.Close()
			}
			reply.Request = req
			return reply, nil
		}
	}
	return f.base.RoundTrip(req)
}

func (f *faults) set(fn func(op string, body []byte) (*http.Response, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fn
	f.tokens = nil
}

func (f *faults) seenTokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

// awsError is a DynamoDB error reply in the JSON 1.0 protocol.
func awsError(status int, typ string, extra string) *http.Response {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + typ + `","message":"injected"` + extra + `}`
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}, "X-Amzn-Requestid": []string{"injected"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}
}

// conflictReply cancels a transaction of n items with a TransactionConflict
// on the first.
func conflictReply(n int) *http.Response {
	reasons := []string{`{"Code":"TransactionConflict","Message":"injected"}`}
	for i := 1; i < n; i++ {
		reasons = append(reasons, `{"Code":"None"}`)
	}
	return awsError(400, "TransactionCanceledException", `,"CancellationReasons":[`+strings.Join(reasons, ",")+`]`)
}

func transactItems(body []byte) int {
	var in struct{ TransactItems []json.RawMessage }
	_ = json.Unmarshal(body, &in)
	return len(in.TransactItems)
}

func newFaultyStore(t *testing.T, maxAttempts int) (*Store, *faults) {
	t.Helper()
	endpoint := testenv.DynamoDBEndpoint(t)
	f := &faults{base: http.DefaultTransport}
	client := NewLocalClient(endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: f}
		o.RetryMaxAttempts = 2 // keep the SDK's own throttling backoff short
	})
	prefix := newTables(t, NewLocalClient(endpoint))
	c := newClock()
	return New(client, Options{TablePrefix: prefix, Clock: c.Now, MaxAttempts: maxAttempts}), f
}

// TestTransactionConflictsAreRetried: a transaction cancelled for a conflict
// with another transaction is not the caller's conflict; the store retries
// it, with a new request token for each attempt.
func TestTransactionConflictsAreRetried(t *testing.T) {
	t.Parallel()
	s, f := newFaultyStore(t, 5)
	ctx := context.Background()
	mustCreate(t, s, testInstance("f1", "alice"))

	conflicts := 0
	f.set(func(op string, body []byte) (*http.Response, bool) {
		if op == "TransactWriteItems" && conflicts < 3 {
			conflicts++
			return conflictReply(transactItems(body)), false
		}
		return nil, false
	})
	got, err := s.Transition(ctx, store.TransitionParams{ID: "f1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
		Event: &container.Event{Type: container.EventCreating}})
	if err != nil || got.Version != 2 {
		t.Fatalf("Transition through 3 conflicts = %+v, %v", got, err)
	}
	tokens := f.seenTokens()
	if len(tokens) != 4 {
		t.Fatalf("%d transaction attempts, want 4", len(tokens))
	}
	seen := map[string]bool{}
	for _, tok := range tokens {
		if tok == "" || len(tok) > 36 || seen[tok] {
			t.Errorf("request tokens must be set, ≤ 36 characters and new per attempt: %q", tokens)
		}
		seen[tok] = true
	}

	// Creates collide on the admission counter the same way.
	conflicts = 0
	f.set(func(op string, body []byte) (*http.Response, bool) {
		if op == "TransactWriteItems" && conflicts < 2 {
			conflicts++
			return conflictReply(transactItems(body)), false
		}
		return nil, false
	})
	if _, err := s.CreateInstance(ctx, createParams(testInstance("f2", "alice"), 5)); err != nil {
		t.Fatalf("CreateInstance through conflicts: %v", err)
	}

	// Endless conflicts: bounded, and reported as unavailable (retryable),
	// never as the caller's conflict.
	f.set(func(op string, body []byte) (*http.Response, bool) {
		if op == "TransactWriteItems" {
			return conflictReply(transactItems(body)), false
		}
		return nil, false
	})
	_, err = s.AppendEvent(ctx, container.Event{InstanceID: "f1", Type: "note"})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrConflict) {
		t.Errorf("AppendEvent under endless conflicts = %v, want ErrUnavailable", err)
	}
	if n := len(f.seenTokens()); n != 5 {
		t.Errorf("%d attempts, want MaxAttempts = 5", n)
	}
}

// TestThrottlingIsUnavailable: throttling that outlasts the SDK's retries
// is ErrUnavailable, for plain reads and for transactions.
func TestThrottlingIsUnavailable(t *testing.T) {
	t.Parallel()
	s, f := newFaultyStore(t, 3)
	ctx := context.Background()
	mustCreate(t, s, testInstance("th", "alice"))
	f.set(func(op string, body []byte) (*http.Response, bool) {
		return awsError(400, "ProvisionedThroughputExceededException", ""), false
	})
	if _, err := s.GetInstance(ctx, "th"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetInstance throttled = %v, want ErrUnavailable", err)
	}
	f.set(func(op string, body []byte) (*http.Response, bool) {
		if op == "TransactWriteItems" {
			return awsError(400, "TransactionCanceledException", `,"CancellationReasons":[{"Code":"ThrottlingError"}]`), false
		}
		return nil, false
	})
	_, err := s.Transition(ctx, store.TransitionParams{ID: "th", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Transition with a throttled item = %v, want ErrUnavailable", err)
	}
	f.set(nil)
	if got, _ := s.GetInstance(ctx, "th"); got.Version != 1 {
		t.Errorf("a throttled transition changed the instance: %+v", got)
	}
}

// TestLostReplyAfterCommit: the transaction commits but its reply is lost
// (a 500 instead); the SDK's retry carries the same request token, so
// DynamoDB answers it with the first outcome and the caller sees success,
// not an ErrAlreadyExists caused by its own first attempt.
func TestLostReplyAfterCommit(t *testing.T) {
	t.Parallel()
	s, f := newFaultyStore(t, 3)
	ctx := context.Background()
	lost := false
	f.set(func(op string, body []byte) (*http.Response, bool) {
		if op == "TransactWriteItems" && !lost {
			lost = true
			return awsError(500, "InternalServerError", ""), true
		}
		return nil, false
	})
	start := time.Now()
	if _, err := s.CreateInstance(ctx, createParams(testInstance("lr", "alice"), 0)); err != nil {
		t.Fatalf("CreateInstance with a lost reply: %v", err)
	}
	tokens := f.seenTokens()
	if len(tokens) != 2 || tokens[0] != tokens[1] {
		t.Errorf("the SDK's retry must reuse the token: %q", tokens)
	}
	if n, _ := s.AdmissionCount(ctx); n != 1 {
		t.Errorf("admission counted %d times, want once", n)
	}
	t.Logf("recovered in %s", time.Since(start))
}
