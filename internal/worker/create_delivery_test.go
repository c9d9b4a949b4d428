package worker_test

import (
	"encoding/json"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestCreateDeliveries: a create written through the manager is delivered
// in its own transaction, as container.created (no previous status,
// pending, seq 1, the instance as created), to every matching
// subscription (not another owner's, not one filtered on another group)
// and put on the event bus as "Container Created".
func TestCreateDeliveries(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newDeliveryFixture(t, b, true, nil)
		ctx, s, m, w, bus := f.ctx, f.s, f.m, f.w, f.bus
		admin := identity.Caller{User: "root", Admin: true}
		if _, _, err := m.PutTemplate(ctx, admin, container.Template{Name: "tiny", Runtime: "docker", Image: "busybox:1",
			PullPolicy: container.PullNever, Command: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
		rcv := webhooktest.NewReceiver(t)
		alice, bob := identity.Caller{User: "alice"}, identity.Caller{User: "bob"}
		sub, err := m.CreateWebhook(ctx, alice, manager.WebhookRequest{URL: rcv.URL + "/all"})
		if err != nil {
			t.Fatal(err)
		}
		rcv.SetSecret("", sub.Secret)
		other, err := m.CreateWebhook(ctx, alice, manager.WebhookRequest{URL: rcv.URL + "/other", Group: "other"})
		if err != nil {
			t.Fatal(err)
		}
		bobs, err := m.CreateWebhook(ctx, bob, manager.WebhookRequest{URL: rcv.URL + "/bob"})
		if err != nil {
			t.Fatal(err)
		}

		res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "tiny", Group: "dag-1"}, nil, "req-1")
		if err != nil {
			t.Fatal(err)
		}
		inst := res.Instance
		ds := deliveriesOf(t, s, inst.ID)
		targets := map[string]bool{}
		for _, it := range ds {
			targets[it.Delivery.WebhookID] = true
			d := it.Delivery
			if d.From != "" || d.To != fsm.Pending || d.Seq != 1 || d.Instance == nil || d.Instance.ID != inst.ID ||
				d.Instance.Status != fsm.Pending || d.Instance.Group != "dag-1" || it.InstanceVersion != 1 {
				t.Errorf("create delivery = %+v (item %+v); want \"\" → pending at seq 1 with the instance as created", d, it)
			}
		}
		if len(ds) != 2 || !targets[sub.ID] || !targets[container.EventBusTarget] || targets[other.ID] || targets[bobs.ID] {
			t.Fatalf("the create wrote deliveries to %v; want exactly %s and the event bus", targets, sub.ID)
		}
		for _, it := range ds {
			if res := w.Process(ctx, deliveryOf(t, it)); !res.Ack || res.Reason != "done" {
				t.Fatalf("Process(%s) = %+v; want done", it.Delivery.WebhookID, res)
			}
		}
		got := rcv.Received()
		if len(got) != 1 {
			t.Fatalf("receiver got %d requests; want 1", len(got))
		}
		p := got[0]
		if p.Type != webhook.EventCreated || p.Change.PreviousStatus != "" || p.Change.Status != fsm.Pending || p.Change.Seq != 1 ||
			p.Change.Instance.ID != inst.ID || p.Change.WebhookID != sub.ID {
			t.Errorf("receiver got %+v; want container.created of %s at seq 1", p, inst.ID)
		}
		_, entries := bus.got()
		if len(entries) != 1 || entries[0].DetailType != eventbus.DetailTypeCreated {
			t.Fatalf("bus got %+v; want one %q", entries, eventbus.DetailTypeCreated)
		}
		var detail eventbus.Detail
		if err := json.Unmarshal([]byte(entries[0].Detail), &detail); err != nil {
			t.Fatal(err)
		}
		if detail.PreviousStatus != "" || detail.Status != fsm.Pending || detail.Seq != 1 || detail.Instance.ID != inst.ID {
			t.Errorf("bus detail = %+v; want the create at seq 1", detail)
		}

	})
}
