package eventbus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestDeliverRequestShape: one delivery is one PutEvents request with one
// entry: source berth, the documented detail-type, the configured bus, the
// change's time, and the detail schema (instance as the API shows it,
// previous and new status, reason, seq, delivery id), without the spec.
func TestDeliverRequestShape(t *testing.T) {
	ep := &endpoint{}
	d := &Deliverer{Publisher: &Publisher{Client: newEndpoint(t, ep), Bus: "berth-events"}}
	at := time.Date(2026, 12, 2, 7, 30, 0, 0, time.UTC)
	inst := container.Instance{
		ID: "i-1", Name: "web", Owner: "alice", Template: "nginx", Labels: map[string]string{"team": "a"},
		Runtime: container.RuntimeDocker, Image: "nginx:1", Status: fsm.Running, CreatedAt: at, UpdatedAt: at, Version: 4,
		Spec: container.Spec{Env: map[string]string{"TOKEN": "s3cret-value"}},
	}
	item := container.OutboxItem{ID: "ob-1", InstanceID: "i-1", Op: container.OpDeliver, CreatedAt: at,
		Delivery: &container.Delivery{WebhookID: container.EventBusTarget, From: fsm.Creating, To: fsm.Running,
			Reason: "started", Seq: 7, Instance: &inst}}
	if err := d.Deliver(testContext(t), item); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	reqs := ep.got()
	if len(reqs) != 1 || len(reqs[0].Entries) != 1 {
		t.Fatalf("requests = %+v; want one request with one entry", reqs)
	}
	if reqs[0].Target != "AWSEvents.PutEvents" {
		t.Errorf("X-Amz-Target = %q; want AWSEvents.PutEvents", reqs[0].Target)
	}
	e := reqs[0].Entries[0]
	if e.Source != "berth" || e.DetailType != "Container Status Change" || e.EventBusName != "berth-events" {
		t.Errorf("entry = source %q, detail-type %q, bus %q; want berth, Container Status Change, berth-events",
			e.Source, e.DetailType, e.EventBusName)
	}
	if e.Time == nil || int64(*e.Time) != at.Unix() {
		t.Errorf("entry time = %v; want %d", e.Time, at.Unix())
	}
	if strings.Contains(e.Detail, "s3cret-value") {
		t.Errorf("detail carries the spec's environment: %s", e.Detail)
	}
	var detail map[string]json.RawMessage
	if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
		t.Fatalf("detail %q: %v", e.Detail, err)
	}
	wantInst, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"instance": string(wantInst), "previous_status": `"creating"`, "status": `"running"`,
		"reason": `"started"`, "seq": "7", "delivery_id": `"ob-1"`,
	}
	if len(detail) != len(want) {
		t.Errorf("detail keys = %d (%s); want %d", len(detail), e.Detail, len(want))
	}
	for k, v := range want {
		if string(detail[k]) != v {
			t.Errorf("detail[%q] = %s; want %s", k, detail[k], v)
		}
	}
}

// TestDeliverWithoutChange: an item that carries no change is an error,
// not an empty event.
func TestDeliverWithoutChange(t *testing.T) {
	ep := &endpoint{}
	d := &Deliverer{Publisher: &Publisher{Client: newEndpoint(t, ep)}}
	if err := d.Deliver(testContext(t), container.OutboxItem{ID: "ob-1", Op: container.OpDeliver}); err == nil {
		t.Fatal("Deliver of an item without a delivery succeeded")
	}
	if n := len(ep.got()); n != 0 {
		t.Errorf("%d requests sent; want none", n)
	}
}

func entryOf(i, detailBytes int) types.PutEventsRequestEntry {
	pad := strings.Repeat("x", max(detailBytes-30, 0))
	return types.PutEventsRequestEntry{
		Source: aws.String(Source), DetailType: aws.String(DetailTypeStatusChange),
		Detail: aws.String(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, pad)),
	}
}

// wireSize is entrySize of an entry as the endpoint received it.
func wireSize(e wireEntry) int {
	n := 14 + len(e.Source) + len(e.DetailType) + len(e.Detail)
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// TestPublishBatches: entries go in requests of at most 10 entries and
// 256 KiB, each entry once and in order; an entry larger than a request
// may be is refused alone, the others are put.
func TestPublishBatches(t *testing.T) {
	cases := []struct {
		name         string
		sizes        []int
		wantRequests []int // entries per request
		wantTooLarge []int // indexes
	}{
		{"one", []int{100}, []int{1}, nil},
		{"ten fit one request", repeat(10, 100), []int{10}, nil},
		{"25 by tens", repeat(25, 100), []int{10, 10, 5}, nil},
		{"by bytes", repeat(5, 100*1024), []int{2, 2, 1}, nil},
		{"bytes then count", append([]int{200 * 1024}, repeat(12, 1000)...), []int{10, 3}, nil},
		{"too large alone", []int{100, 300 * 1024, 100}, []int{2}, []int{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := &endpoint{}
			p := &Publisher{Client: newEndpoint(t, ep)}
			entries := make([]types.PutEventsRequestEntry, len(tc.sizes))
			for i, n := range tc.sizes {
				entries[i] = entryOf(i, n)
			}
			errs, err := p.Publish(testContext(t), entries)
			if (err != nil) != (len(tc.wantTooLarge) > 0) {
				t.Fatalf("Publish error = %v; want one only with entries too large", err)
			}
			for i, e := range errs {
				tooLarge := containsInt(tc.wantTooLarge, i)
				if tooLarge != errors.Is(e, ErrTooLarge) || (!tooLarge && e != nil) {
					t.Errorf("entry %d: error %v; too large: %v", i, e, tooLarge)
				}
			}
			reqs := ep.got()
			var per []int
			next := 0
			for _, r := range reqs {
				per = append(per, len(r.Entries))
				size := 0
				for _, e := range r.Entries {
					size += wireSize(e)
					for containsInt(tc.wantTooLarge, next) {
						next++
					}
					if want := fmt.Sprintf(`{"n":%d,`, next); !strings.HasPrefix(e.Detail, want) {
						t.Errorf("entry %.12s…; want entry %d next", e.Detail, next)
					}
					next++
				}
				if len(r.Entries) > MaxEntries || size > MaxBatchBytes {
					t.Errorf("request of %d entries, %d bytes: over PutEvents' limits", len(r.Entries), size)
				}
			}
			if fmt.Sprint(per) != fmt.Sprint(tc.wantRequests) {
				t.Errorf("entries per request = %v; want %v", per, tc.wantRequests)
			}
		})
	}
}

// TestPublishRetriesFailedEntries: entries a request reports failed
// (FailedEntryCount) are put again, and only they, until they are put or
// Attempts is spent; the others are not sent twice.
func TestPublishRetriesFailedEntries(t *testing.T) {
	cases := []struct {
		name      string
		failUntil int // calls on which odd entries fail
		attempts  int
		wantCalls int
		wantErr   bool
	}{
		{"put on the second attempt", 1, 3, 2, false},
		{"put on the third attempt", 2, 3, 3, false},
		{"given up after the attempts", 5, 3, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := &endpoint{answer: func(call int, entries []wireEntry) []wireResult {
				out := make([]wireResult, len(entries))
				for i, e := range entries {
					var n struct{ N int }
					_ = json.Unmarshal([]byte(e.Detail), &n)
					if call <= tc.failUntil && n.N%2 == 1 {
						out[i] = wireResult{ErrorCode: "InternalFailure", ErrorMessage: "try again"}
					}
				}
				return out
			}}
			p := &Publisher{Client: newEndpoint(t, ep), Attempts: tc.attempts, RetryDelay: time.Millisecond}
			entries := make([]types.PutEventsRequestEntry, 6)
			for i := range entries {
				entries[i] = entryOf(i, 50)
			}
			errs, err := p.Publish(testContext(t), entries)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Publish error = %v; want error: %v", err, tc.wantErr)
			}
			for i, e := range errs {
				if wantFail := tc.wantErr && i%2 == 1; (e != nil) != wantFail {
					t.Errorf("entry %d: error %v; want failed: %v", i, e, wantFail)
				}
				if e != nil && !strings.Contains(e.Error(), "InternalFailure") {
					t.Errorf("entry %d: error %v; want the entry's error code", i, e)
				}
			}
			reqs := ep.got()
			if len(reqs) != tc.wantCalls {
				t.Fatalf("%d requests; want %d", len(reqs), tc.wantCalls)
			}
			if len(reqs[0].Entries) != 6 {
				t.Errorf("first request has %d entries; want 6", len(reqs[0].Entries))
			}
			for c, r := range reqs[1:] {
				if len(r.Entries) != 3 {
					t.Errorf("retry %d has %d entries; want the 3 failed ones", c+1, len(r.Entries))
				}
				for _, e := range r.Entries {
					var n struct{ N int }
					_ = json.Unmarshal([]byte(e.Detail), &n)
					if n.N%2 != 1 {
						t.Errorf("retry %d resent entry %d, which was put", c+1, n.N)
					}
				}
			}
		})
	}
}

// TestPublishThrottledRequestRetriedBySDK: a throttled request is retried
// whole by the SDK's retryer, and Publish reports every entry put.
func TestPublishThrottledRequestRetriedBySDK(t *testing.T) {
	ep := &endpoint{throttle: 2}
	p := &Publisher{Client: newEndpoint(t, ep), Attempts: 1}
	entries := []types.PutEventsRequestEntry{entryOf(0, 50), entryOf(1, 50)}
	if _, err := p.Publish(testContext(t), entries); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	reqs := ep.got()
	if len(reqs) != 3 {
		t.Fatalf("%d requests; want 3 (two throttled, one put)", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Entries) != 2 {
			t.Errorf("request %d has %d entries; want 2", i, len(r.Entries))
		}
	}
}

func repeat(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
