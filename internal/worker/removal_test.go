package worker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestRemovalDeliveries: an instance's final removal, written through the
// manager, is delivered in its own transaction to every subscription
// without a status filter (signed, as container.deleted, with the removal's
// event number and the instance as last stored) and put on the event bus
// as "Container Deleted"; a subscription filtered on statuses gets none.
func TestRemovalDeliveries(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newDeliveryFixture(t, b, true, nil)
		ctx, s, m, w, bus := f.ctx, f.s, f.m, f.w, f.bus
		rcv := webhooktest.NewReceiver(t)
		alice := identity.Caller{User: "alice"}
		all, err := m.CreateWebhook(ctx, alice, manager.WebhookRequest{URL: rcv.URL + "/all"})
		if err != nil {
			t.Fatal(err)
		}
		rcv.SetSecret("", all.Secret)
		filtered, err := m.CreateWebhook(ctx, alice, manager.WebhookRequest{URL: rcv.URL + "/filtered",
			Statuses: []fsm.Status{fsm.Running, fsm.Deleting}})
		if err != nil {
			t.Fatal(err)
		}

		inst, err := s.CreateInstance(ctx, storetest.NewCreate(storetest.NewClock(), "alice"))
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range []fsm.Status{fsm.DeletePending, fsm.Deleting} {
			managertest.Move(t, m, alice, inst.ID, to)
		}
		before := map[string]bool{}
		for _, it := range deliveriesOf(t, s, inst.ID) {
			before[it.ID] = true
		}
		if err := m.Deleted(ctx, inst.ID, "", nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		page, err := s.ListEvents(ctx, inst.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		last := page.Items[len(page.Items)-1]
		var removal []container.OutboxItem
		for _, it := range deliveriesOf(t, s, inst.ID) {
			if !before[it.ID] {
				removal = append(removal, it)
			}
		}
		if len(removal) != 2 {
			t.Fatalf("the removal wrote %d deliveries; want 2 (the unfiltered subscription's, the bus's): %+v", len(removal), removal)
		}
		for _, it := range removal {
			d := it.Delivery
			if d.WebhookID == filtered.ID || d.From != fsm.Deleting || d.To != "" || d.Seq != last.Seq ||
				d.Instance == nil || d.Instance.Status != fsm.Deleting {
				t.Errorf("removal delivery = %+v; want deleting → removed at seq %d, not to %s", d, last.Seq, filtered.ID)
			}
			if res := w.Process(ctx, deliveryOf(t, it)); !res.Ack || res.Reason != "done" {
				t.Fatalf("Process(%s) = %+v; want done", d.WebhookID, res)
			}
		}
		got := rcv.Received()
		if len(got) != 1 || got[0].Type != webhook.EventDeleted || got[0].Change.Status != "" ||
			got[0].Change.PreviousStatus != fsm.Deleting || got[0].Change.Instance.ID != inst.ID || got[0].Change.Seq != last.Seq {
			t.Errorf("receiver got %+v; want one container.deleted of %s at seq %d", got, inst.ID, last.Seq)
		}
		_, entries := bus.got()
		if len(entries) != 1 || entries[0].DetailType != eventbus.DetailTypeDeleted {
			t.Fatalf("bus got %+v; want one Container Deleted", entries)
		}
		var detail eventbus.Detail
		if err := json.Unmarshal([]byte(entries[0].Detail), &detail); err != nil {
			t.Fatal(err)
		}
		if detail.PreviousStatus != fsm.Deleting || detail.Status != "" || detail.Seq != last.Seq || detail.Instance.ID != inst.ID {
			t.Errorf("bus detail = %+v", detail)
		}
	})
}
