package storetest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// writeDeliveries writes one field-only transition of inst carrying a
// delivery to each of webhooks, and returns their ids in that order.
func writeDeliveries(t *testing.T, s store.Store, inst container.Instance, webhooks ...string) (container.Instance, []string) {
	t.Helper()
	ids := make([]string, len(webhooks))
	ds := make([]container.OutboxItem, len(webhooks))
	for i, wh := range webhooks {
		ids[i] = newID()
		ds[i] = container.OutboxItem{ID: ids[i], Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: wh, From: inst.Status, To: inst.Status}}
	}
	next, err := s.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
		From: inst.Status, To: inst.Status, Deliveries: ds})
	if err != nil {
		t.Fatalf("Transition with deliveries to %v: %v", webhooks, err)
	}
	return next, ids
}

func outboxIDs(items []container.OutboxItem) []string {
	ids := make([]string, len(items))
	for i, ob := range items {
		ids[i] = ob.ID
	}
	return ids
}

// listAllDeliveries pages through a subscription's deliveries.
func listAllDeliveries(t *testing.T, s store.Store, webhookID string, limit int) (ids []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		page, err := s.ListDeliveries(context.Background(), webhookID, cursor, limit)
		if err != nil {
			t.Fatalf("ListDeliveries(%s, limit %d, page %d): %v", webhookID, limit, pages+1, err)
		}
		if max := cmp.Or(limit, 50); len(page.Items) > max {
			t.Fatalf("ListDeliveries(%s) page of %d items; limit %d", webhookID, len(page.Items), limit)
		}
		ids = append(ids, outboxIDs(page.Items)...)
		pages++
		if page.NextCursor == "" {
			return ids, pages
		}
		cursor = page.NextCursor
	}
}

// testListDeliveries: a subscription's deliveries, newest first, in pages,
// apart from other subscriptions' and from the event bus's; a done one is
// listed until it expires; a cursor of another kind is refused.
func testListDeliveries(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	if page, err := s.ListDeliveries(ctx, "wh-a", "", 0); err != nil || len(page.Items) != 0 || page.NextCursor != "" {
		t.Fatalf("ListDeliveries with none = %v, %v; want an empty last page", outboxIDs(page.Items), err)
	}
	var a, b []string
	for i := range 5 {
		c.Advance(time.Second)
		var ids []string
		if i == 2 {
			inst, ids = writeDeliveries(t, s, inst, "wh-a", "wh-b", container.EventBusTarget)
			b = append(b, ids[1])
		} else {
			inst, ids = writeDeliveries(t, s, inst, "wh-a")
		}
		a = append(a, ids[0])
	}
	slices.Reverse(a)
	for _, tc := range []struct {
		webhook   string
		limit     int
		want      []string
		wantPages int
	}{
		{"wh-a", 0, a, 1},
		{"wh-a", 2, a, 3},
		{"wh-a", 5, a, 1},
		{"wh-a", 1, a, 5},
		{"wh-b", 2, b, 1},
		{container.EventBusTarget, 10, nil, 1},
		{"wh-none", 10, nil, 1},
	} {
		got, pages := listAllDeliveries(t, s, tc.webhook, tc.limit)
		if !slices.Equal(got, tc.want) || pages != tc.wantPages {
			t.Errorf("ListDeliveries(%s, limit %d) = %v in %d pages; want %v in %d", tc.webhook, tc.limit, got, pages,
				tc.want, tc.wantPages)
		}
	}
	page, err := s.ListDeliveries(ctx, "wh-a", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := page.Items[0].Delivery; d == nil || d.WebhookID != "wh-a" || d.Seq != inst.EventSeq || d.Instance == nil || d.Instance.ID != inst.ID {
		t.Errorf("listed delivery = %+v; want wh-a's, of %s at seq %d", d, inst.ID, inst.EventSeq)
	}
	events, err := s.ListEvents(ctx, inst.ID, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"garbage!", events.NextCursor} {
		if bad == "" {
			continue
		}
		if _, err := s.ListDeliveries(ctx, "wh-a", bad, 1); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("ListDeliveries(cursor %q) = %v; want ErrInvalidCursor", bad, err)
		}
	}
	// A finished delivery is listed for store.OutboxRetention, then not.
	if err := s.MarkDone(ctx, a[len(a)-1], c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(store.OutboxRetention + time.Second)
	if got, _ := listAllDeliveries(t, s, "wh-a", 10); !slices.Equal(got, a[:len(a)-1]) {
		t.Errorf("after the done delivery expired, ListDeliveries = %v; want %v", got, a[:len(a)-1])
	}
}

// testRedeliver: a done or failed delivery is pending again, under its
// id, with no attempts; an unfinished one is left alone, so a repeat asks
// for one send; an unknown one is not found.
func testRedeliver(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	_, ids := writeDeliveries(t, s, inst, "wh-a", "wh-a", "wh-a")
	done, failed, pending := ids[0], ids[1], ids[2]
	created := c.Now()
	c.Advance(time.Minute)
	if err := s.MarkDispatched(ctx, done, c.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDone(ctx, done, c.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, failed, 7, "webhook receiver answered 500", c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	for _, id := range []string{done, failed} {
		got, err := s.RedeliverOutbox(ctx, id, c.Now())
		if err != nil {
			t.Fatalf("RedeliverOutbox(%s): %v", id, err)
		}
		stored, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ob := range []container.OutboxItem{got, stored} {
			if ob.ID != id || ob.State != container.OutboxPending || ob.Attempts != 0 || ob.LastError != "" ||
				ob.DispatchedAt != nil || !ob.CreatedAt.Equal(created) || !ob.UpdatedAt.Equal(c.Now()) ||
				ob.Delivery == nil || ob.Delivery.WebhookID != "wh-a" {
				t.Errorf("redelivered %s = %+v; want it pending again, fresh, created at %v", id, ob, created)
			}
		}
	}
	undispatched, err := s.ListUndispatched(ctx, c.Now().Add(time.Second), 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := outboxIDs(undispatched); !slices.Contains(got, done) || !slices.Contains(got, failed) {
		t.Errorf("ListUndispatched = %v; want the redelivered %s and %s (the dispatcher's sweep sends them)", got, done, failed)
	}
	// Unfinished: left as it is, whoever asks and however often.
	if err := s.MarkDispatched(ctx, done, c.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{done, pending, failed} {
		before, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		got, err := s.RedeliverOutbox(ctx, id, c.Now())
		if err != nil || got.State != before.State || !got.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("RedeliverOutbox(%s in %s) = %+v, %v; want it unchanged", id, before.State, got, err)
		}
	}
	// Redelivered, it lives as a pending item does, past the finished
	// item's retention.
	c.Advance(store.OutboxRetention + time.Hour)
	if ob, err := s.GetOutbox(ctx, failed); err != nil || ob.State != container.OutboxPending {
		t.Errorf("a redelivered item a day later = %+v, %v; want it pending still", ob, err)
	}
	if _, err := s.RedeliverOutbox(ctx, "nope", c.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RedeliverOutbox(unknown) = %v; want ErrNotFound", err)
	}
}

// testDeleteDeliveries: a removal's deliveries are written with it, each
// carrying the removal's event number and the instance as it was last
// stored; a removal that does not commit writes none, and one whose
// delivery id is taken is refused whole.
func testDeleteDeliveries(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	inst = move(t, s, c, inst, fsm.DeletePending)
	inst = move(t, s, c, inst, fsm.Deleting)
	removal := func(ids ...string) []container.OutboxItem {
		out := make([]container.OutboxItem, len(ids))
		for i, id := range ids {
			out[i] = container.OutboxItem{ID: id, Op: container.OpDeliver,
				Delivery: &container.Delivery{WebhookID: "wh-a", From: fsm.Deleting}}
		}
		return out
	}
	event := container.Event{Type: container.EventDeleted, From: fsm.Deleting, At: c.Now()}
	stale := newID()
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version + 3, Event: event,
		Deliveries: removal(stale)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale DeleteInstance = %v; want ErrConflict", err)
	}
	if _, err := s.GetOutbox(ctx, stale); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the stale removal's delivery was written: %v", err)
	}
	// A taken id refuses the whole removal.
	_, taken := writeDeliveries(t, s, inst, "wh-b")
	inst = mustGet(t, s, inst.ID)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version, Event: event,
		Deliveries: removal(taken[0])}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("DeleteInstance reusing a delivery id = %v; want ErrAlreadyExists", err)
	}
	mustGet(t, s, inst.ID)
	ids := []string{newID(), newID()}
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version, Event: event,
		Deliveries: removal(ids...)}); err != nil {
		t.Fatalf("DeleteInstance with deliveries: %v", err)
	}
	evs := allEvents(t, s, inst.ID, 10)
	last := evs[len(evs)-1]
	if last.Type != container.EventDeleted {
		t.Fatalf("last event %+v; want the deletion", last)
	}
	for _, id := range ids {
		ob, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatalf("removal delivery %s: %v", id, err)
		}
		d := ob.Delivery
		switch {
		case ob.Op != container.OpDeliver || ob.State != container.OutboxPending || ob.InstanceID != inst.ID || ob.InstanceVersion != inst.Version:
			t.Errorf("removal delivery item = %+v; want a pending deliver item for %s@%d", ob, inst.ID, inst.Version)
		case d == nil || d.From != fsm.Deleting || d.To != "" || d.Seq != last.Seq:
			t.Errorf("removal delivery = %+v; want deleting → removed at seq %d", d, last.Seq)
		case d.Instance == nil || d.Instance.Status != fsm.Deleting || d.Instance.Owner != "alice" || d.Instance.ID != inst.ID:
			t.Errorf("removal delivery instance = %+v; want it as last stored", d.Instance)
		}
	}
	if got, _ := listAllDeliveries(t, s, "wh-a", 10); !slices.Equal(got, []string{ids[1], ids[0]}) {
		t.Errorf("ListDeliveries(wh-a) = %v; want the removal's %v", got, ids)
	}
}
