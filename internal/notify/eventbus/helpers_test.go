package eventbus

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// wireEntry is a PutEvents request entry as it crosses the wire.
type wireEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
	Time         *float64
	Resources    []string
}

// wireRequest is one PutEvents request as the endpoint received it.
type wireRequest struct {
	Target  string
	Entries []wireEntry
}

// wireResult is the endpoint's answer for one entry.
type wireResult struct {
	EventId      string `json:",omitempty"` //nolint:revive // the wire's spelling
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

// endpoint is a local PutEvents endpoint: it records every request and
// answers through answer (all entries put when nil). throttle, when above
// zero, is how many requests it first refuses as throttled.
type endpoint struct {
	mu       sync.Mutex
	requests []wireRequest
	answer   func(call int, entries []wireEntry) []wireResult
	throttle int
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct{ Entries []wireEntry }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, wireRequest{Target: r.Header.Get("X-Amz-Target"), Entries: body.Entries})
	call := len(e.requests)
	throttled := e.throttle > 0
	if throttled {
		e.throttle--
	}
	answer := e.answer
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if throttled {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
		return
	}
	results := make([]wireResult, len(body.Entries))
	if answer != nil {
		results = answer(call, body.Entries)
	}
	failed := 0
	for i := range results {
		if results[i].ErrorCode != "" {
			failed++
		} else {
			results[i].EventId = "ev-" + time.Now().Format("150405.000000")
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"FailedEntryCount": failed, "Entries": results})
}

func (e *endpoint) got() []wireRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wireRequest(nil), e.requests...)
}

// newEndpoint starts e and returns an EventBridge client of the AWS SDK
// aimed at it, whose retryer does not wait between attempts.
func newEndpoint(t *testing.T, e *endpoint) *eventbridge.Client {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return eventbridge.New(eventbridge.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
