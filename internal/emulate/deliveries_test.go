package emulate_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
)

// notifiedChange is one change of one instance: what a receiver de-duplicates on.
type notifiedChange struct {
	instance string
	seq      int64
}

// byChange groups what rcv received by change: the webhook-ids each
// change came with, and the change itself.
func byChange(rcv *webhooktest.Receiver) (map[notifiedChange][]string, map[notifiedChange]webhook.Change) {
	ids, changes := map[notifiedChange][]string{}, map[notifiedChange]webhook.Change{}
	for _, r := range rcv.Received() {
		k := notifiedChange{r.Change.Instance.ID, r.Change.Seq}
		ids[k] = append(ids[k], r.ID)
		changes[k] = r.Change
	}
	return ids, changes
}

// hangingReceiver takes a request and never answers it (the sender's
// 15 s bound ends it); it counts the requests it holds.
type hangingReceiver struct {
	srv     *httptest.Server
	held    atomic.Int32
	release chan struct{}
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	r := &hangingReceiver{release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.held.Add(1)
		defer r.held.Add(-1)
		select {
		case <-req.Context().Done():
		case <-r.release:
		}
	}))
	t.Cleanup(func() { close(r.release); r.srv.Close() })
	return r
}

// subscribeWebhook creates token's subscription to url through the front door and
// returns its id and secret.
func (st *stack) subscribeWebhook(token, url string) (id, secret string) {
	st.t.Helper()
	r := st.do(http.MethodPost, "/api/webhooks", token, map[string]any{"url": url})
	if r.status != http.StatusCreated {
		st.t.Fatalf("POST /api/webhooks %s: %d %s", url, r.status, r.body)
	}
	m := r.json(st.t)
	id, _ = m["id"].(string)
	secret, _ = m["secret"].(string)
	if id == "" || m["url"] != url || !strings.HasPrefix(secret, "whsec_") {
		st.t.Fatalf("POST /api/webhooks answered %s; want id, url and a whsec_ secret", r.body)
	}
	return id, secret
}

// deliveryLogLines returns, per function, the outbox ids of the deliveries
// its invocations logged as msg (the worker's delivery lines), from the
// functions' output ([Function#n] prefixed lines).
func (st *stack) deliveryLogLines(msg string) map[string][]string {
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(st.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "[") {
			continue
		}
		end := strings.Index(line, "] ")
		if end < 0 {
			continue
		}
		fn, _, _ := strings.Cut(line[1:end], "#")
		var rec struct {
			Msg      string `json:"msg"`
			OutboxID string `json:"outbox_id"`
		}
		if json.Unmarshal([]byte(line[end+2:]), &rec) != nil || rec.Msg != msg {
			continue
		}
		out[fn] = append(out[fn], rec.OutboxID)
	}
	return out
}

// TestEmulatedDeliveries: on the emulated stack (the notify queue and
// function of template.yaml), a subscription made through the front door
// gets every status change of an instance driven through create, stop and
// delete, each signed (verified by the Standard Webhooks reference
// library), its order restorable by seq, a duplicate carrying the same
// webhook-id; the notify function made every delivery, the workers none.
// Then receivers that hang hold the notify function's instances, not the
// lifecycle worker's: with more requests held than the lifecycle worker
// has instances, a stop and a start still complete (generous bounds).
func TestEmulatedDeliveries(t *testing.T) {
	t.Parallel()
	st := start(t, setup{webhooks: map[string]any{"allowed_networks": []any{"127.0.0.0/8"}}})
	// A container that ends on SIGTERM, so that a stop takes no grace period.
	st.putTemplate("trapper", []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"})
	rcv := webhooktest.NewReceiver(t)
	subID, secret := st.subscribeWebhook(aliceToken, rcv.URL+"/hooks")
	rcv.SetSecret("", secret)

	id := st.create(aliceToken, "trapper", "notified")
	st.wait(aliceToken, id, "running", 2*time.Minute)
	if r := st.do(http.MethodPost, "/api/containers/"+id+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "stopped", 2*time.Minute)
	if r := st.do(http.MethodDelete, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if r := st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil); r.status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the container is still there 2 minutes after its delete")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every status change, as the instance's history records it.
	r := st.do(http.MethodGet, "/api/containers/"+id+"/events?limit=100", aliceToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	var evs struct{ Items []container.Event }
	if err := json.Unmarshal(r.body, &evs); err != nil {
		t.Fatal(err)
	}
	want := map[notifiedChange]container.Event{}
	recorded := map[int64]bool{}
	for _, ev := range evs.Items {
		recorded[ev.Seq] = true
		if ev.From != "" && ev.To != "" && ev.From != ev.To {
			want[notifiedChange{id, ev.Seq}] = ev
		}
	}
	if len(want) < 5 {
		t.Fatalf("the history records %d status changes: %+v; want creating, running, stopping, stopped, deleting at least", len(want), evs.Items)
	}
	missing := func() []notifiedChange {
		got, _ := byChange(rcv)
		var out []notifiedChange
		for k := range want {
			if len(got[k]) == 0 {
				out = append(out, k)
			}
		}
		return out
	}
	for deadline := time.After(3 * time.Minute); len(missing()) > 0; {
		select {
		case <-rcv.Arrived():
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("status changes never delivered: %v", missing())
		}
	}

	byKey, changes := byChange(rcv)
	var ids []string
	var order []webhook.Change
	for k, hookIDs := range byKey {
		if len(slices.Compact(slices.Clone(hookIDs))) != 1 {
			t.Errorf("change %v came with several webhook-ids: %v", k, hookIDs)
		}
		ids = append(ids, hookIDs[0])
		c := changes[k]
		order = append(order, c)
		if ev, ok := want[k]; ok {
			if c.PreviousStatus != ev.From || c.Status != ev.To || c.WebhookID != subID {
				t.Errorf("change %v delivered as %s → %s to %s; its event is %s → %s", k, c.PreviousStatus, c.Status, c.WebhookID, ev.From, ev.To)
			}
		} else if k.instance != id || !recorded[k.seq] {
			t.Errorf("delivered %v, which the history does not record", k)
		}
	}
	// The order, restored by seq, is the instance's: each change starts
	// where the one before it ended.
	slices.SortFunc(order, func(a, b webhook.Change) int { return int(a.Seq - b.Seq) })
	var chain []string
	for i, c := range order {
		chain = append(chain, string(c.PreviousStatus)+"→"+string(c.Status))
		if i > 0 && order[i-1].Status != "" && c.PreviousStatus != "" && c.PreviousStatus != order[i-1].Status {
			t.Errorf("by seq, %s → %s (seq %d) follows a change to %s", c.PreviousStatus, c.Status, c.Seq, order[i-1].Status)
		}
	}
	t.Logf("%d status changes delivered, by seq: %s", len(want), strings.Join(chain, ", "))

	// Who delivered: the notify function, every one; the workers none.
	var delivered map[string][]string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		delivered = st.deliveryLogLines("webhook delivered")
		if !slices.ContainsFunc(ids, func(x string) bool { return !slices.Contains(delivered["NotifyFunction"], x) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, x := range ids {
		if !slices.Contains(delivered["NotifyFunction"], x) {
			t.Errorf("delivery %s: no \"webhook delivered\" line of the notify function", x)
		}
	}
	for fn, got := range delivered {
		if fn != "NotifyFunction" {
			t.Errorf("%s delivered %v; only the notify function delivers", fn, got)
		}
	}
	if len(st.functionPIDs("NotifyFunction")) == 0 {
		t.Error("NotifyFunction never started under the RIE")
	}

	// Receivers that hang: four subscriptions (each change makes four
	// deliveries, each held until the sender's 15 s bound, then retried)
	// hold at least as many requests as the lifecycle worker has instances
	// under the emulator; its stops and starts go on.
	const lifecycleInstances = 4 // the emulator's concurrency of an unreserved function
	hang := newHangingReceiver(t)
	for i := range lifecycleInstances {
		st.subscribeWebhook(aliceToken, hang.srv.URL+"/hang/"+string(rune('a'+i)))
	}
	id2 := st.create(aliceToken, "trapper", "held")
	st.wait(aliceToken, id2, "running", 2*time.Minute)
	for deadline := time.Now().Add(2 * time.Minute); hang.held.Load() < lifecycleInstances; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the hanging receiver holds %d requests after 2 minutes; want %d", hang.held.Load(), lifecycleInstances)
		}
	}
	heldAtStop := hang.held.Load()
	t0 := time.Now()
	if r := st.do(http.MethodPost, "/api/containers/"+id2+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id2, "stopped", time.Minute)
	stopTook := time.Since(t0)
	heldAtStart := hang.held.Load()
	t1 := time.Now()
	if r := st.do(http.MethodPost, "/api/containers/"+id2+"/start", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id2, "running", time.Minute)
	t.Logf("with %d, then %d requests held by a hanging receiver: stop took %s, start %s",
		heldAtStop, heldAtStart, stopTook.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	// The held requests were the notify function's: each ends at the
	// sender's bound, and the notify function logs its retry.
	var retried map[string][]string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		retried = st.deliveryLogLines("webhook delivery failed; will retry")
		if len(retried["NotifyFunction"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the notify function logged no failed attempt at the hanging receivers within 2 minutes")
		}
	}
	for fn, got := range retried {
		if fn != "NotifyFunction" {
			t.Errorf("%s retried deliveries %v; only the notify function delivers", fn, got)
		}
	}
}
