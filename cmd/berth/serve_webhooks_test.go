package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/notify/webhook"
)

// hookReceiver is a real receiver: it verifies every request with the
// Standard Webhooks reference library, answers 503 while down, and keeps
// what it took.
type hookReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret atomic.Value
	down   atomic.Bool
	// refused counts the requests answered 503 while down.
	refused atomic.Int32
	// lastRefused is when the last of them came (Unix nanoseconds).
	lastRefused atomic.Int64
	mu          sync.Mutex
	// byKey: instance id and seq → the webhook-ids that carried it.
	byKey    map[hookKey][]string
	payloads map[hookKey]webhook.Change
	// types: the payload type each key came as.
	types    map[hookKey]string
	requests int
	changed  chan struct{}
}

type hookKey struct {
	instance string
	seq      int64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t, byKey: map[hookKey][]string{}, payloads: map[hookKey]webhook.Change{}, types: map[hookKey]string{}, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.down.Load() {
			r.refused.Add(1)
			r.lastRefused.Store(time.Now().UnixNano())
			w.WriteHeader(http.StatusServiceUnavailable)
			select {
			case r.changed <- struct{}{}:
			default:
			}
			return
		}
		v, err := standardwebhooks.NewWebhook(r.secret.Load().(string))
		if err == nil {
			err = v.Verify(body, req.Header)
		}
		if err != nil {
			t.Errorf("receiver: signature refused: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var p webhook.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("receiver: %v: %s", err, body)
		}
		k := hookKey{p.Data.Instance.ID, p.Data.Seq}
		r.mu.Lock()
		r.byKey[k] = append(r.byKey[k], req.Header.Get(webhook.HeaderID))
		r.payloads[k] = p.Data
		r.types[k] = p.Type
		r.requests++
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// receiverOutage is how long TestServeWebhooksAtLeastOnce's receiver
// refuses every request (the Done-when: 60 s).
const receiverOutage = 60 * time.Second

// TestServeWebhooksAtLeastOnce: through `berth serve`, every status change
// of every instance reaches a real receiver, signed (checked by the
// reference library), across a receiver outage of receiverOutage (with a
// short retry backoff, webhooks.retry_backoff and retry_backoff_max, the
// retries go on during it and right after it) and a kill -9 of the
// server while deliveries are in flight: none is lost, each carries its
// event's seq (the order is restorable), and the duplicates of one change
// share one webhook-id.
func TestServeWebhooksAtLeastOnce(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{extra: "\nwebhooks:\n  allowed_networks: [127.0.0.0/8]\n  retry_backoff: 500ms\n  retry_backoff_max: 3s\n"})
	e.start()
	e.putTemplates()
	rcv := newHookReceiver(t)
	var sub struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	r := e.must(e.call("POST", "/api/webhooks", aliceToken, map[string]any{"url": rcv.srv.URL + "/hooks"}), http.StatusCreated)
	if err := json.Unmarshal(r.body, &sub); err != nil {
		t.Fatal(err)
	}
	rcv.secret.Store(sub.Secret)
	// A refused receiver stays refused with the allowed network set.
	e.must(e.call("POST", "/api/webhooks", aliceToken, map[string]any{"url": "http://169.254.169.254/"}), http.StatusUnprocessableEntity)

	// The receiver is down while the instances change, for receiverOutage.
	outageStart := time.Now()
	rcv.down.Store(true)
	var ids []string
	for _, tpl := range []string{"ok", "ok", "bad", "sleeper"} {
		ids = append(ids, e.create(tpl).ID)
	}
	e.waitFor(ids[0], fsm.Stopped, 90*time.Second)
	e.waitFor(ids[2], fsm.Failed, 90*time.Second)
	e.waitFor(ids[3], fsm.Running, 90*time.Second)
	e.must(e.call("POST", "/api/containers/"+ids[3]+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(ids[3], fsm.Stopped, 90*time.Second)
	// The outage lasts until the receiver refused at least one attempt of
	// every instance's changes (and retries are backing off).
	outage := time.After(90 * time.Second)
	for rcv.refused.Load() < int32(2*len(ids)) {
		select {
		case <-rcv.changed:
		case <-outage:
			t.Fatalf("only %d attempts reached the receiver during the outage", rcv.refused.Load())
		}
	}
	// It stays down for receiverOutage of wall time; the deliveries are
	// retried all along (one came in its last third).
	<-time.After(time.Until(outageStart.Add(receiverOutage)))
	last := time.Unix(0, rcv.lastRefused.Load())
	if since := last.Sub(outageStart); since < receiverOutage*2/3 {
		t.Errorf("the last attempt refused came %s into the %s outage; want retries all along", since.Round(time.Millisecond), receiverOutage)
	}
	rcv.down.Store(false)
	t.Logf("receiver down for %s: %d attempts refused", time.Since(outageStart).Round(time.Millisecond), rcv.refused.Load())
	for len(rcv.changed) > 0 {
		<-rcv.changed
	}

	// Kill -9 once the first deliveries arrive, and start again.
	select {
	case <-rcv.changed:
	case <-time.After(90 * time.Second):
		t.Fatalf("no delivery within 90 s of the receiver's return\n%s", tail(e.logs.String(), 4000))
	}
	e.kill()
	e.start()

	// Every status change of every instance, as its history records it,
	// and its create (its first event, from no status to pending).
	want := map[hookKey]container.Event{}
	created := map[string]hookKey{}
	for _, id := range ids {
		var evs struct{ Items []container.Event }
		if err := json.Unmarshal(e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", aliceToken, nil), http.StatusOK).body, &evs); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			switch {
			case ev.From == "" && ev.To == fsm.Pending && ev.Type == container.EventCreateRequested:
				if _, ok := created[id]; ok {
					t.Fatalf("instance %s has two create events", id)
				}
				created[id] = hookKey{id, ev.Seq}
				want[hookKey{id, ev.Seq}] = ev
			case ev.From != "" && ev.To != "" && ev.From != ev.To:
				want[hookKey{id, ev.Seq}] = ev
			}
		}
	}
	missing := func() []hookKey {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		var out []hookKey
		for k := range want {
			if len(rcv.byKey[k]) == 0 {
				out = append(out, k)
			}
		}
		return out
	}
	deadline := time.After(3 * time.Minute)
	for len(missing()) > 0 {
		select {
		case <-rcv.changed:
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("changes never delivered: %v\n%s", missing(), tail(e.logs.String(), 4000))
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	dups := 0
	for k, ev := range want {
		got := rcv.byKey[k]
		if len(slices.Compact(slices.Clone(got))) != 1 {
			t.Errorf("change %v came with several webhook-ids: %v", k, got)
		}
		dups += len(got) - 1
		if p := rcv.payloads[k]; p.PreviousStatus != ev.From || p.Status != ev.To || p.Instance.ID != k.instance || p.WebhookID != sub.ID {
			t.Errorf("change %v delivered as %+v; its event is %s → %s", k, p, ev.From, ev.To)
		}
		// A create comes as container.created, every other change as
		// container.status_changed.
		wantType := webhook.EventStatusChanged
		if created[k.instance] == k {
			wantType = webhook.EventCreated
		}
		if rcv.types[k] != wantType {
			t.Errorf("change %v (%s → %s) delivered as %q; want %q", k, ev.From, ev.To, rcv.types[k], wantType)
		}
	}
	// Exactly one create delivery per instance, first in seq order.
	for _, id := range ids {
		c, ok := created[id]
		if !ok {
			t.Errorf("instance %s: its history records no create", id)
			continue
		}
		for k, typ := range rcv.types {
			switch {
			case k.instance != id:
			case typ == webhook.EventCreated && k != c:
				t.Errorf("instance %s: a second create delivery %v beside %v", id, k, c)
			case k.seq < c.seq:
				t.Errorf("instance %s: delivery %v (%s) comes before its create %v", id, k, typ, c)
			}
		}
	}
	for k := range rcv.byKey {
		if _, ok := want[k]; !ok {
			t.Errorf("delivered %v, which no event records", k)
		}
	}
	t.Logf("%d changes (%d creates) of %d instances delivered in %d requests (%d duplicates)", len(want), len(created), len(ids), rcv.requests, dups)
}
