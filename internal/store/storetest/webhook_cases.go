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
