package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testFinishedOutboxExpires: done and failed items are gone after
// OutboxRetention (read by the store's clock, whatever the backend's TTL
// does): a failed item's reason stays on its instance, and storage must not
// grow with failed operations.
func testFinishedOutboxExpires(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	done, failed := NewCreate(c, "alice"), NewCreate(c, "alice")
	mustCreate(t, s, done)
	mustCreate(t, s, failed)
	if err := s.MarkDone(ctx, done.Outbox.ID, c.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, failed.Outbox.ID, 5, "gave up", c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(store.OutboxRetention - time.Minute)
	if _, err := s.GetOutbox(ctx, done.Outbox.ID); err != nil {
		t.Fatalf("done item before its retention ends: %v", err)
	}
	if ob, err := s.GetOutbox(ctx, failed.Outbox.ID); err != nil || ob.State != container.OutboxFailed {
		t.Fatalf("failed item before its retention ends: %+v, %v", ob, err)
	}
	c.Advance(2 * time.Minute)
	_, err := s.GetOutbox(ctx, done.Outbox.ID)
	wantErr(t, "done item after its retention", err, store.ErrNotFound)
	_, err = s.GetOutbox(ctx, failed.Outbox.ID)
	wantErr(t, "failed item after its retention", err, store.ErrNotFound)
}

// testEveryOutboxItemExpires: an item nothing finished (pending, or
// dispatched and lost) is gone OutboxMaxAge after its creation, and a
// pending one leaves ListUndispatched with it.
func testEveryOutboxItemExpires(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	pending, dispatched := NewCreate(c, "alice"), NewCreate(c, "alice")
	mustCreate(t, s, pending)
	mustCreate(t, s, dispatched)
	if err := s.MarkDispatched(ctx, dispatched.Outbox.ID, c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(store.OutboxMaxAge - time.Minute)
	for _, id := range []string{pending.Outbox.ID, dispatched.Outbox.ID} {
		if _, err := s.GetOutbox(ctx, id); err != nil {
			t.Fatalf("item %s before OutboxMaxAge: %v", id, err)
		}
	}
	if items, err := s.ListUndispatched(ctx, c.Now(), 10); err != nil || len(items) != 1 || items[0].ID != pending.Outbox.ID {
		t.Fatalf("undispatched before OutboxMaxAge: %+v, %v", items, err)
	}
	c.Advance(2 * time.Minute)
	for _, id := range []string{pending.Outbox.ID, dispatched.Outbox.ID} {
		_, err := s.GetOutbox(ctx, id)
		wantErr(t, "unfinished item after OutboxMaxAge", err, store.ErrNotFound)
	}
	if items, err := s.ListUndispatched(ctx, c.Now(), 10); err != nil || len(items) != 0 {
		t.Fatalf("undispatched after OutboxMaxAge: %+v, %v", items, err)
	}
}

// testListLimitsAndBadCursors: limits past 100 are clamped, not refused;
// a cursor the store did not hand out is ErrInvalidCursor.
func testListLimitsAndBadCursors(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		mustCreate(t, s, NewCreate(c, "alice"))
	}
	page, err := s.ListInstances(ctx, store.ListQuery{Owner: "alice", Limit: 1000})
	if err != nil || len(page.Items) != 3 || page.NextCursor != "" {
		t.Fatalf("limit 1000: %d items, cursor %q, %v", len(page.Items), page.NextCursor, err)
	}
	for _, cursor := range []string{"%%%", "bm90IGEgY3Vyc29y", "eyJ4IjoxfQ"} {
		_, err := s.ListInstances(ctx, store.ListQuery{Owner: "alice", Cursor: cursor})
		wantErr(t, "ListInstances(bad cursor "+cursor+")", err, store.ErrInvalidCursor)
		_, err = s.ListActive(ctx, cursor, 10)
		wantErr(t, "ListActive(bad cursor "+cursor+")", err, store.ErrInvalidCursor)
	}
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	_, err = s.ListEvents(ctx, inst.ID, "%%%", 10)
	wantErr(t, "ListEvents(bad cursor)", err, store.ErrInvalidCursor)
}

// testCompleteUnknownOutbox: naming an outbox item that is gone (a done
// item past its retention) does not fail the instance write it rides on.
func testCompleteUnknownOutbox(t *testing.T, s store.Store, c *Clock) {
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	out, err := s.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: 1,
		From: fsm.Pending, To: fsm.Creating, CompleteOutboxID: "no-such-item"})
	if err != nil || out.Status != fsm.Creating {
		t.Fatalf("transition completing an unknown item: %+v, %v", out, err)
	}
	if err := s.DeleteInstance(context.Background(), store.DeleteParams{ID: inst.ID, ExpectVersion: out.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}, CompleteOutboxID: "no-such-item"}); err != nil {
		t.Fatalf("delete completing an unknown item: %v", err)
	}
}

// testDeletedIDNotReused: while a deleted instance's history is kept, its
// id cannot be created again, so two histories never share an id.
func testDeletedIDNotReused(t *testing.T, s store.Store, c *Clock) {
	p := NewCreate(c, "alice")
	inst := mustCreate(t, s, p)
	if err := s.DeleteInstance(context.Background(), store.DeleteParams{ID: inst.ID, ExpectVersion: 1,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	again := NewCreate(c, "alice")
	again.Instance.ID, again.Outbox.InstanceID, again.Event.InstanceID = p.Instance.ID, p.Instance.ID, p.Instance.ID
	_, err := s.CreateInstance(context.Background(), again)
	wantErr(t, "re-create of a deleted id", err, store.ErrAlreadyExists)
	if n := admission(t, s); n != 0 {
		t.Fatalf("admission %d after a refused re-create", n)
	}
}
