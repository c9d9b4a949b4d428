package worker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// deliveriesOf returns the pending deliver items of an instance.
func deliveriesOf(t *testing.T, s store.Store, instanceID string) []container.OutboxItem {
	t.Helper()
	items, err := s.ListUndispatched(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []container.OutboxItem
	for _, it := range items {
		if it.Op == container.OpDeliver && it.InstanceID == instanceID {
			out = append(out, it)
		}
	}
	return out
}

func deliveryOf(t testing.TB, it container.OutboxItem) queue.Delivery {
	t.Helper()
	body, err := outbox.FromItem(it).Encode()
	if err != nil {
		t.Fatal(err)
	}
	return queue.Delivery{MessageID: it.ID, Body: body, ReceiveCount: 1, SentAt: time.Now()}
}

// TestWebhookDeliveries: a status change written through the manager
// becomes a signed delivery to each matching subscription; failed attempts
// (500, a redirect) are re-sent with a delay and the same webhook-id; a
// duplicate message is acknowledged without a request; past the retry
// bound the delivery fails; a deleted subscription's delivery is dropped.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newDeliveryFixture(t, b, false, nil)
		ctx, s, m, w := f.ctx, f.s, f.m, f.w
		rcv := webhooktest.NewReceiver(t)
		sub, err := m.CreateWebhook(ctx, identity.Caller{User: "alice"}, manager.WebhookRequest{URL: rcv.URL + "/hook"})
		if err != nil {
			t.Fatal(err)
		}
		rcv.SetSecret("", sub.Secret)

		clock := storetest.NewClock()
		// A claim keeps the status reason: the change carries it.
		create := storetest.NewCreate(clock, "alice")
		create.Instance.StatusReason = "placing"
		inst, err := s.CreateInstance(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		bobs, err := s.CreateInstance(ctx, storetest.NewCreate(clock, "bob"))
		if err != nil {
			t.Fatal(err)
		}
		alice := identity.Caller{User: "alice"}
		advance := func(id string, to fsm.Status) container.Instance {
			t.Helper()
			return managertest.Move(t, m, alice, id, to)
		}
		managertest.Move(t, m, identity.Caller{User: "bob"}, bobs.ID, fsm.Creating)
		if ds := deliveriesOf(t, s, bobs.ID); len(ds) != 0 {
			t.Fatalf("bob's change was delivered to alice's subscription: %+v", ds)
		}
		advance(inst.ID, fsm.Creating)
		ds := deliveriesOf(t, s, inst.ID)
		if len(ds) != 1 {
			t.Fatalf("deliveries of alice's change = %d; want 1", len(ds))
		}
		first := ds[0]

		// 500, then a redirect (to the metadata address, not followed):
		// each a retry with the same webhook-id, re-sent with a delay.
		d := deliveryOf(t, first)
		for _, code := range []int{http.StatusInternalServerError, http.StatusFound} {
			rcv.Answer(code)
			res := w.Process(ctx, d)
			if res.Ack || res.Requeue == nil || res.Requeue.Delay != 3*time.Second {
				t.Fatalf("receiver answering %d: %+v; want a delayed re-send", code, res)
			}
			d = queue.Delivery{MessageID: res.Requeue.ID, Body: res.Requeue.Body, ReceiveCount: 1, SentAt: time.Now()}
		}
		if it, _ := s.GetOutbox(ctx, first.ID); it.Attempts != 2 || it.LastError == "" {
			t.Errorf("after two failures the item is %+v; want 2 attempts and the last error", it)
		}
		rcv.Answer(http.StatusNoContent)
		if res := w.Process(ctx, d); !res.Ack || res.Reason != "done" {
			t.Fatalf("receiver answering 204: %+v", res)
		}
		if res := w.Process(ctx, d); !res.Ack || !strings.HasPrefix(res.Reason, "stale") {
			t.Fatalf("duplicate message: %+v; want acknowledged as stale", res)
		}
		got := rcv.Received()
		if len(got) != 3 {
			t.Fatalf("receiver got %d requests; want 3 (500, 302, 204)", len(got))
		}
		for _, r := range got {
			if r.ID != first.ID || r.Type != webhook.EventStatusChanged || r.Change.Seq != 2 || r.Change.PreviousStatus != fsm.Pending ||
				r.Change.Status != fsm.Creating || r.Change.Reason != "placing" || r.Change.Instance.ID != inst.ID ||
				r.Change.Instance.Status != fsm.Creating || r.Change.WebhookID != sub.ID {
				t.Errorf("request %+v; want webhook-id %s and the pending → creating change, seq 2", r, first.ID)
			}
		}

		// Past the retry bound: the delivery fails, with its reason.
		advance(inst.ID, fsm.Running)
		second := deliveriesOf(t, s, inst.ID)[0]
		rcv.Answer(http.StatusServiceUnavailable)
		msg := outbox.FromItem(second)
		msg.Unavailable = &outbox.Unavailable{Since: time.Now().Add(-worker.DefaultDeliveryRetryFor - time.Minute), Retries: 40}
		body, _ := msg.Encode()
		if res := w.Process(ctx, queue.Delivery{MessageID: "late", Body: body, ReceiveCount: 1}); !res.Ack || !strings.HasPrefix(res.Reason, "failed") {
			t.Fatalf("past the retry bound: %+v; want failed", res)
		}
		if it, _ := s.GetOutbox(ctx, second.ID); it.State != container.OutboxFailed || !strings.Contains(it.LastError, "503") {
			t.Errorf("given-up delivery = %+v; want failed with the receiver's answer", it)
		}

		// A deleted subscription's pending delivery is dropped unsent.
		advance(inst.ID, fsm.StopPending)
		third := deliveriesOf(t, s, inst.ID)[0]
		if err := m.DeleteWebhook(ctx, identity.Caller{User: "alice"}, sub.ID); err != nil {
			t.Fatal(err)
		}
		before := len(rcv.Received())
		if res := w.Process(ctx, deliveryOf(t, third)); !res.Ack || !strings.Contains(res.Reason, "subscription gone") {
			t.Fatalf("delivery of a deleted subscription: %+v", res)
		}
		if len(rcv.Received()) != before {
			t.Error("a deleted subscription's delivery was sent")
		}
		advance(inst.ID, fsm.Stopping)
		if ds := deliveriesOf(t, s, inst.ID); len(ds) != 0 {
			t.Errorf("a change after the subscription's delete wrote %d deliveries", len(ds))
		}
	})
}
