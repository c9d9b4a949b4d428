package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// NewWebhook returns a valid subscription of owner for PutWebhook.
func NewWebhook(owner string) container.Webhook {
	return container.Webhook{
		ID: newID(), Owner: owner, URL: "https://hooks.example.com/" + owner,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Template: "busybox",
		Statuses: []fsm.Status{fsm.Running, fsm.Failed},
	}
}

func webhookIDs(ws []container.Webhook) []string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}

// testWebhooks: put, get, list per owner and for all, delete, and the
// errors of each.
func testWebhooks(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	if ws, err := s.ListWebhooks(ctx, ""); err != nil || len(ws) != 0 {
		t.Fatalf("ListWebhooks on an empty store = %v, %v; want none", ws, err)
	}
	if _, err := s.GetWebhook(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetWebhook(unknown) = %v; want ErrNotFound", err)
	}
	if err := s.DeleteWebhook(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteWebhook(unknown) = %v; want ErrNotFound", err)
	}
	a1, a2, b1 := NewWebhook("alice"), NewWebhook("alice"), NewWebhook("bob")
	b1.AllOwners, b1.Statuses, b1.Template, b1.Group = true, nil, "", "dag-1"
	for _, w := range []container.Webhook{a1, a2, b1} {
		got, err := s.PutWebhook(ctx, w)
		if err != nil {
			t.Fatalf("PutWebhook(%s): %v", w.ID, err)
		}
		if !got.CreatedAt.Equal(c.Now()) {
			t.Errorf("PutWebhook(%s).CreatedAt = %v; want the store's clock %v", w.ID, got.CreatedAt, c.Now())
		}
		c.Advance(1)
	}
	if _, err := s.PutWebhook(ctx, a1); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("PutWebhook(same id) = %v; want ErrAlreadyExists", err)
	}
	bad := NewWebhook("alice")
	bad.Secret = ""
	if _, err := s.PutWebhook(ctx, bad); !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("PutWebhook(no secret) = %v; want ErrInvalidParams", err)
	}
	got, err := s.GetWebhook(ctx, b1.ID)
	if err != nil {
		t.Fatalf("GetWebhook: %v", err)
	}
	if got.Owner != "bob" || !got.AllOwners || got.Group != "dag-1" || got.URL != b1.URL || got.Secret != b1.Secret {
		t.Errorf("GetWebhook = %+v; want %+v", got, b1)
	}
	if got, _ := s.GetWebhook(ctx, a1.ID); !slices.Equal(got.Statuses, a1.Statuses) || got.Template != "busybox" {
		t.Errorf("GetWebhook(%s) filters = %v %q; want %v busybox", a1.ID, got.Statuses, got.Template, a1.Statuses)
	}
	for _, tc := range []struct {
		owner string
		want  []string
	}{
		{"alice", []string{a1.ID, a2.ID}},
		{"bob", []string{b1.ID}},
		{"carol", []string{}},
		{"", []string{a1.ID, a2.ID, b1.ID}},
	} {
		ws, err := s.ListWebhooks(ctx, tc.owner)
		if err != nil || !slices.Equal(webhookIDs(ws), tc.want) {
			t.Errorf("ListWebhooks(%q) = %v, %v; want %v", tc.owner, webhookIDs(ws), err, tc.want)
		}
	}
	if err := s.DeleteWebhook(ctx, a1.ID); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	if _, err := s.GetWebhook(ctx, a1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetWebhook after delete = %v; want ErrNotFound", err)
	}
	if err := s.DeleteWebhook(ctx, a1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteWebhook = %v; want ErrNotFound", err)
	}
	if ws, _ := s.ListWebhooks(ctx, ""); !slices.Equal(webhookIDs(ws), []string{a2.ID, b1.ID}) {
		t.Errorf("ListWebhooks after delete = %v; want [%s %s]", webhookIDs(ws), a2.ID, b1.ID)
	}
}

// testWebhookLimits: an owner's MaxWebhooksPerOwner+1st subscription is
// refused and nothing is written; another owner still subscribes.
func testWebhookLimits(t *testing.T, s store.Store, _ *Clock) {
	ctx := context.Background()
	for i := range store.MaxWebhooksPerOwner {
		if _, err := s.PutWebhook(ctx, NewWebhook("alice")); err != nil {
			t.Fatalf("PutWebhook %d: %v", i, err)
		}
	}
	if _, err := s.PutWebhook(ctx, NewWebhook("alice")); !errors.Is(err, store.ErrWebhookLimit) {
		t.Fatalf("PutWebhook past the owner's bound = %v; want ErrWebhookLimit", err)
	}
	if ws, _ := s.ListWebhooks(ctx, "alice"); len(ws) != store.MaxWebhooksPerOwner {
		t.Errorf("alice has %d subscriptions; want %d", len(ws), store.MaxWebhooksPerOwner)
	}
	if _, err := s.PutWebhook(ctx, NewWebhook("bob")); err != nil {
		t.Errorf("PutWebhook(bob) beside a full alice: %v", err)
	}
	// Subscriptions to every owner are bounded together, whichever admin
	// made them.
	for i := range store.MaxAllOwnerWebhooks {
		w := NewWebhook(fmt.Sprintf("admin-%d", i%2))
		w.AllOwners = true
		if _, err := s.PutWebhook(ctx, w); err != nil {
			t.Fatalf("all-owner PutWebhook %d: %v", i, err)
		}
	}
	w := NewWebhook("admin-3")
	w.AllOwners = true
	if _, err := s.PutWebhook(ctx, w); !errors.Is(err, store.ErrWebhookLimit) {
		t.Errorf("all-owner PutWebhook past the bound = %v; want ErrWebhookLimit", err)
	}
}

// testWebhooksRace: concurrent puts and deletes on the one document lose
// no write.
func testWebhooksRace(t *testing.T, s store.Store, _ *Clock) {
	ctx := context.Background()
	const n = 8
	old := make([]container.Webhook, n)
	for i := range old {
		old[i] = NewWebhook(fmt.Sprintf("user-%d", i))
		if _, err := s.PutWebhook(ctx, old[i]); err != nil {
			t.Fatal(err)
		}
	}
	fresh := make([]container.Webhook, n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		fresh[i] = NewWebhook(fmt.Sprintf("user-%d", i))
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := s.PutWebhook(ctx, fresh[i]); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if err := s.DeleteWebhook(ctx, old[i].ID); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
	ws, err := s.ListWebhooks(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := webhookIDs(ws)
	slices.Sort(got)
	want := webhookIDs(fresh)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("after racing writes the store holds %v; want exactly the new %v", got, want)
	}
}

// testTransitionDeliveries: a transition's webhook deliveries are written
// with it, each carrying the change's event number and the instance as the
// write left it; a transition that does not commit writes none.
func testTransitionDeliveries(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	deliveries := func(ids ...string) []container.OutboxItem {
		out := make([]container.OutboxItem, len(ids))
		for i, id := range ids {
			out[i] = container.OutboxItem{ID: id, Op: container.OpDeliver,
				Delivery: &container.Delivery{WebhookID: "wh-" + id, From: fsm.Pending, To: fsm.Creating, Reason: "because"}}
		}
		return out
	}
	// A lost race writes nothing.
	stale := store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version + 7, From: fsm.Pending, To: fsm.Creating,
		Event: &container.Event{Type: "ContainerCreating", From: fsm.Pending, To: fsm.Creating}, Deliveries: deliveries(newID())}
	if _, err := s.Transition(ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale transition = %v; want ErrConflict", err)
	}
	if _, err := s.GetOutbox(ctx, stale.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the stale transition's delivery was written: %v", err)
	}
	ids := []string{newID(), newID()}
	next, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Pending, To: fsm.Creating,
		Event: &container.Event{Type: "ContainerCreating", From: fsm.Pending, To: fsm.Creating}, Deliveries: deliveries(ids...)})
	if err != nil {
		t.Fatalf("Transition with deliveries: %v", err)
	}
	for _, id := range ids {
		ob, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatalf("delivery %s: %v", id, err)
		}
		d := ob.Delivery
		switch {
		case ob.Op != container.OpDeliver || ob.State != container.OutboxPending || ob.InstanceID != inst.ID || ob.InstanceVersion != next.Version:
			t.Errorf("delivery item = %+v; want a pending deliver item for %s@%d", ob, inst.ID, next.Version)
		case d == nil || d.WebhookID != "wh-"+id || d.From != fsm.Pending || d.To != fsm.Creating || d.Reason != "because":
			t.Errorf("delivery = %+v", d)
		case d.Seq != 2 || d.Seq != next.EventSeq:
			t.Errorf("delivery seq = %d; want the change's event, %d", d.Seq, next.EventSeq)
		case d.Instance == nil || d.Instance.Status != fsm.Creating || d.Instance.Version != next.Version || d.Instance.Owner != "alice":
			t.Errorf("delivery instance = %+v; want it as the write left it", d.Instance)
		}
	}
	// An id taken makes the whole transition fail.
	if _, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: next.Version, From: fsm.Creating, To: fsm.Running,
		Deliveries: deliveries(ids[0])}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("transition reusing a delivery id = %v; want ErrAlreadyExists", err)
	}
	if got := mustGet(t, s, inst.ID); got.Version != next.Version || got.Status != fsm.Creating {
		t.Errorf("the failed transition changed the instance: %s@%d", got.Status, got.Version)
	}
}
