package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// busEndpoint is a local PutEvents endpoint: it answers 500 while down,
// and records the entries of the requests it takes.
type busEndpoint struct {
	down    atomic.Bool
	mu      sync.Mutex
	calls   int
	entries []struct{ Source, DetailType, Detail, EventBusName string }
}

func (e *busEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if e.down.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"__type":"InternalException","message":"down"}`))
		return
	}
	var body struct {
		Entries []struct{ Source, DetailType, Detail, EventBusName string }
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.entries = append(e.entries, body.Entries...)
	e.mu.Unlock()
	results := make([]map[string]string, len(body.Entries))
	for i := range results {
		results[i] = map[string]string{"EventId": "ev"}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"FailedEntryCount": 0, "Entries": results})
}

func (e *busEndpoint) got() (calls int, entries []struct{ Source, DetailType, Detail, EventBusName string }) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls, append(entries, e.entries...)
}

func newBusDeliverer(t *testing.T, e *busEndpoint) *eventbus.Deliverer {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	client := eventbridge.New(eventbridge.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
	return &eventbus.Deliverer{Publisher: &eventbus.Publisher{Client: client, Bus: "berth-events", RetryDelay: time.Millisecond}}
}

// TestEventBusDeliveries: with an event bus, every status change written
// through the manager carries one delivery to the bus in its own
// transaction (beside the subscriptions' deliveries); the worker puts it
// on the bus through the AWS SDK, retries it with a delay while the bus
// fails, and acknowledges a duplicate without putting it again. Without an
// event bus no such delivery is written.
func TestEventBusDeliveries(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newDeliveryFixture(t, b, true, nil)
		ctx, s, m, w, bus, quiet, guard := f.ctx, f.s, f.m, f.w, f.bus, f.quiet, f.guard

		clock := storetest.NewClock()
		// A claim keeps the status reason: the change carries it.
		create := storetest.NewCreate(clock, "alice")
		create.Instance.StatusReason = "placing"
		inst, err := s.CreateInstance(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		advance := func(m *manager.Manager, id string, to fsm.Status) {
			t.Helper()
			managertest.Move(t, m, identity.Caller{Admin: true}, id, to)
		}
		advance(m, inst.ID, fsm.Creating)
		ds := deliveriesOf(t, s, inst.ID)
		if len(ds) != 1 || ds[0].Delivery == nil || ds[0].Delivery.WebhookID != container.EventBusTarget {
			t.Fatalf("deliveries of a change = %+v; want one to the event bus", ds)
		}
		first := ds[0]
		if d := first.Delivery; d.Seq != 2 || d.Instance == nil || d.Instance.Status != fsm.Creating {
			t.Errorf("the bus's delivery = %+v; want seq 2 and the instance as the change left it", d)
		}

		// The bus fails: a delayed re-send, the attempt recorded.
		bus.down.Store(true)
		res := w.Process(ctx, deliveryOf(t, first))
		if res.Ack || res.Requeue == nil || res.Requeue.Delay != 3*time.Second {
			t.Fatalf("bus failing: %+v; want a delayed re-send", res)
		}
		if it, _ := s.GetOutbox(ctx, first.ID); it.Attempts != 1 || !strings.Contains(it.LastError, "InternalException") {
			t.Errorf("after a failure the item is %+v; want 1 attempt and the bus's error", it)
		}
		bus.down.Store(false)
		d := queue.Delivery{MessageID: res.Requeue.ID, Body: res.Requeue.Body, ReceiveCount: 1, SentAt: time.Now()}
		if res := w.Process(ctx, d); !res.Ack || res.Reason != "done" {
			t.Fatalf("bus up: %+v; want done", res)
		}
		if res := w.Process(ctx, d); !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
			t.Fatalf("duplicate message: %+v; want acknowledged as stale", res)
		}
		calls, entries := bus.got()
		if len(entries) != 1 {
			t.Fatalf("bus got %d entries in %d requests; want 1", len(entries), calls)
		}
		e := entries[0]
		var detail eventbus.Detail
		if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
			t.Fatal(err)
		}
		if e.Source != eventbus.Source || e.DetailType != eventbus.DetailTypeStatusChange || e.EventBusName != "berth-events" ||
			detail.Instance.ID != inst.ID || detail.PreviousStatus != fsm.Pending || detail.Status != fsm.Creating ||
			detail.Reason != "placing" || detail.Seq != 2 || detail.DeliveryID != first.ID {
			t.Errorf("event %+v, detail %+v; want the pending → creating change, seq 2", e, detail)
		}

		// With a subscription, a change is delivered to both.
		rcv := webhooktest.NewReceiver(t)
		if _, err := m.CreateWebhook(ctx, identity.Caller{User: "alice"}, manager.WebhookRequest{URL: rcv.URL}); err != nil {
			t.Fatal(err)
		}
		advance(m, inst.ID, fsm.Running)
		targets := map[string]int{}
		for _, it := range deliveriesOf(t, s, inst.ID) {
			if it.Delivery.WebhookID == container.EventBusTarget {
				targets["bus"]++
			} else {
				targets["webhook"]++
			}
		}
		if targets["bus"] != 1 || targets["webhook"] != 1 {
			t.Errorf("deliveries of a change with a subscription: %v; want one to the bus, one to the webhook", targets)
		}

		// Without an event bus, no delivery to it.
		other, err := s.CreateInstance(ctx, storetest.NewCreate(clock, "bob"))
		if err != nil {
			t.Fatal(err)
		}
		plain := manager.New(manager.Options{Store: s, Runtimes: []string{"docker"}, Logger: quiet, Webhooks: guard})
		advance(plain, other.ID, fsm.Creating)
		if ds := deliveriesOf(t, s, other.ID); len(ds) != 0 {
			t.Errorf("a manager without an event bus wrote %d deliveries", len(ds))
		}
	})
}

// TestEventBusDeliveryWithoutDeliverer: a worker without an event bus
// does not acknowledge the bus's delivery (nor send it to a webhook): it
// is retried, for a worker that has one.
func TestEventBusDeliveryWithoutDeliverer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := teststores.Bolt(t, time.Now)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: s, Runtimes: []string{"docker"}, Logger: quiet, EventBus: true})
	w := worker.New(worker.Options{Manager: m, Store: s, Logger: quiet,
		Webhooks: &webhook.Deliverer{Subscriptions: s}, Backoff: func(int) time.Duration { return time.Second }})
	inst, err := s.CreateInstance(ctx, storetest.NewCreate(storetest.NewClock(), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	managertest.Move(t, m, identity.Caller{User: "alice"}, inst.ID, fsm.Creating)
	ds := deliveriesOf(t, s, inst.ID)
	if len(ds) != 1 {
		t.Fatalf("%d deliveries; want 1", len(ds))
	}
	res := w.Process(ctx, deliveryOf(t, ds[0]))
	if res.Ack || res.Requeue == nil || !strings.Contains(res.Reason, "no event bus deliverer") {
		t.Fatalf("bus delivery on a worker without a bus: %+v; want a delayed re-send naming the missing deliverer", res)
	}
}
