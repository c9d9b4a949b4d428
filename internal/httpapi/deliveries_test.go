package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
)

type deliveryJSON struct {
	ID         string `json:"id"`
	WebhookID  string `json:"webhook_id"`
	InstanceID string `json:"instance_id"`
	Seq        int64  `json:"seq"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	LastError  string `json:"last_error"`
}

type deliveryListJSON struct {
	Items      []deliveryJSON `json:"items"`
	NextCursor string         `json:"next_cursor"`
}

// writeDelivery writes a field-only change of inst with a delivery to each
// subscription, as the manager's notifying store does for a status change.
func writeDelivery(t *testing.T, s store.Store, inst container.Instance, webhooks ...string) (container.Instance, []string) {
	t.Helper()
	var ds []container.OutboxItem
	var ids []string
	for _, wh := range webhooks {
		ids = append(ids, container.NewID())
		ds = append(ds, container.OutboxItem{ID: ids[len(ids)-1], Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: wh, From: inst.Status, To: inst.Status}})
	}
	next, err := s.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
		From: inst.Status, To: inst.Status, Deliveries: ds})
	if err != nil {
		t.Fatal(err)
	}
	return next, ids
}

// TestWebhookDeliveries: the deliveries of a subscription, newest first and
// paged, to its owner and the admins only; a redelivery makes a failed or
// delivered one pending again under its id, once however often asked.
func TestWebhookDeliveries(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newWebhookAPI(t, b, webhook.Guard{})
		ctx := context.Background()
		mine := decode[webhookJSON](t, a.mustStatus(a.do("POST", "/api/webhooks", alice, `{"url":"https://93.184.216.34/hook"}`, nil), http.StatusCreated))
		bobs := decode[webhookJSON](t, a.mustStatus(a.do("POST", "/api/webhooks", bob, `{"url":"https://93.184.216.34/bob"}`, nil), http.StatusCreated))
		inst, err := a.store.CreateInstance(ctx, storetest.NewCreate(storetest.NewClock(), "alice"))
		if err != nil {
			t.Fatal(err)
		}
		var want, bobIDs []string
		for range 3 {
			var ids []string
			inst, ids = writeDelivery(t, a.store, inst, mine.ID, bobs.ID)
			want, bobIDs = append([]string{ids[0]}, want...), append(bobIDs, ids[1])
		}
		path := "/api/webhooks/" + mine.ID + "/deliveries"
		var got []string
		cursor := ""
		for pages := 1; ; pages++ {
			l := decode[deliveryListJSON](t, a.mustStatus(a.do("GET", path+"?limit=2&cursor="+cursor, alice, "", nil), http.StatusOK))
			for _, d := range l.Items {
				got = append(got, d.ID)
				if d.WebhookID != mine.ID || d.InstanceID != inst.ID || d.Status != "pending" || d.Seq < 1 {
					t.Errorf("delivery = %+v; want a pending one of %s for %s", d, inst.ID, mine.ID)
				}
			}
			if l.NextCursor == "" {
				if pages != 2 {
					t.Errorf("%d pages of 2 for 3 deliveries", pages)
				}
				break
			}
			cursor = l.NextCursor
			// The cursor is the caller's own: another's is refused.
			a.mustStatus(a.do("GET", path+"?cursor="+cursor, admin, "", nil), http.StatusBadRequest)
		}
		if !slices.Equal(got, want) {
			t.Errorf("listed %v; want newest first %v", got, want)
		}
		// Another owner's subscription is not there for bob; an admin sees it.
		a.mustStatus(a.do("GET", path, bob, "", nil), http.StatusNotFound)
		if l := decode[deliveryListJSON](t, a.mustStatus(a.do("GET", path, admin, "", nil), http.StatusOK)); len(l.Items) != 3 {
			t.Errorf("the admin lists %d deliveries; want 3", len(l.Items))
		}
		a.mustStatus(a.do("GET", "/api/webhooks/nope/deliveries", alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", path+"?limit=1000", alice, "", nil), http.StatusBadRequest)

		oldest := want[2]
		if err := a.store.MarkFailed(ctx, oldest, 9, "webhook receiver answered 503", time.Now()); err != nil {
			t.Fatal(err)
		}
		l := decode[deliveryListJSON](t, a.mustStatus(a.do("GET", path, alice, "", nil), http.StatusOK))
		if d := l.Items[2]; d.ID != oldest || d.Status != "failed" || d.Attempts != 9 || d.LastError != "webhook receiver answered 503" {
			t.Errorf("the failed delivery lists as %+v", d)
		}
		redeliver := path + "/" + oldest + "/redeliver"
		a.mustStatus(a.do("POST", "/api/webhooks/"+bobs.ID+"/deliveries/"+oldest+"/redeliver", bob, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("POST", "/api/webhooks/"+mine.ID+"/deliveries/"+bobIDs[0]+"/redeliver", alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("POST", redeliver, bob, "", nil), http.StatusNotFound)
		for range 2 {
			d := decode[deliveryJSON](t, a.mustStatus(a.do("POST", redeliver, alice, "", nil), http.StatusAccepted))
			if d.ID != oldest || d.Status != "pending" || d.Attempts != 0 || d.LastError != "" {
				t.Errorf("redelivered = %+v; want %s pending, with no attempts", d, oldest)
			}
		}
		ob, err := a.store.GetOutbox(ctx, oldest)
		if err != nil || ob.State != container.OutboxPending {
			t.Fatalf("stored after the redelivery: %+v, %v", ob, err)
		}
		if err := a.store.MarkDone(ctx, oldest, time.Now()); err != nil {
			t.Fatal(err)
		}
		if l := decode[deliveryListJSON](t, a.mustStatus(a.do("GET", path, alice, "", nil), http.StatusOK)); l.Items[2].Status != "delivered" {
			t.Errorf("the done delivery lists as %+v", l.Items[2])
		}
	})
}
