package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

func testOutbox(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	mustCreate(t, s, p)
	id := p.Outbox.ID
	at := c.Now().Add(time.Second)
	if err := s.MarkDispatched(ctx, id, at); err != nil {
		t.Fatalf("MarkDispatched: %v", err)
	}
	ob, _ := s.GetOutbox(ctx, id)
	if ob.State != container.OutboxDispatched || ob.DispatchedAt == nil || !ob.DispatchedAt.Equal(at) {
		t.Fatalf("after dispatch: %+v", ob)
	}
	if err := s.MarkAttempt(ctx, id, 2, "engine unavailable", at); err != nil {
		t.Fatalf("MarkAttempt: %v", err)
	}
	ob, _ = s.GetOutbox(ctx, id)
	if ob.Attempts != 2 || ob.LastError != "engine unavailable" || ob.State != container.OutboxDispatched {
		t.Fatalf("after attempt: %+v", ob)
	}
	if err := s.MarkDone(ctx, id, at); err != nil {
		t.Fatalf("MarkDone: %v", err)
	}
	// A late duplicate dispatch does not reopen a finished item.
	if err := s.MarkDispatched(ctx, id, at.Add(time.Second)); err != nil {
		t.Fatalf("MarkDispatched(done): %v", err)
	}
	ob, _ = s.GetOutbox(ctx, id)
	if ob.State != container.OutboxDone {
		t.Fatalf("done item reopened: %+v", ob)
	}
	p2 := NewCreate(c, "alice")
	mustCreate(t, s, p2)
	if err := s.MarkFailed(ctx, p2.Outbox.ID, 5, "gave up", at); err != nil {
		t.Fatalf("MarkFailed: %v", err)
	}
	ob, _ = s.GetOutbox(ctx, p2.Outbox.ID)
	if ob.State != container.OutboxFailed || ob.Attempts != 5 || ob.LastError != "gave up" {
		t.Fatalf("after failed: %+v", ob)
	}
	for name, err := range map[string]error{
		"MarkDispatched": s.MarkDispatched(ctx, "nope", at),
		"MarkDone":       s.MarkDone(ctx, "nope", at),
		"MarkAttempt":    s.MarkAttempt(ctx, "nope", 1, "x", at),
		"MarkFailed":     s.MarkFailed(ctx, "nope", 1, "x", at),
	} {
		wantErr(t, name+"(missing)", err, store.ErrNotFound)
	}
}

func testListUndispatched(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	var items []string
	for i := 0; i < 4; i++ {
		p := NewCreate(c, "alice")
		mustCreate(t, s, p)
		items = append(items, p.Outbox.ID)
		c.Advance(time.Minute)
	}
	if err := s.MarkDispatched(ctx, items[1], c.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDone(ctx, items[2], c.Now()); err != nil {
		t.Fatal(err)
	}
	// Created before the last one: items 0 and 1; 1 is dispatched.
	got, err := s.ListUndispatched(ctx, c.Now().Add(-time.Minute-time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, it := range got {
		gotIDs = append(gotIDs, it.ID)
	}
	if !slices.Equal(gotIDs, []string{items[0]}) {
		t.Fatalf("ListUndispatched = %v, want [%s]", gotIDs, items[0])
	}
	got, err = s.ListUndispatched(ctx, c.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	gotIDs = gotIDs[:0]
	for _, it := range got {
		gotIDs = append(gotIDs, it.ID)
	}
	if !slices.Equal(gotIDs, []string{items[0], items[3]}) {
		t.Fatalf("ListUndispatched = %v, want [%s %s] oldest first", gotIDs, items[0], items[3])
	}
	got, err = s.ListUndispatched(ctx, c.Now(), 1)
	if err != nil || len(got) != 1 || got[0].ID != items[0] {
		t.Fatalf("ListUndispatched limit 1 = %+v, %v", got, err)
	}
}

func testTemplates(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	tpl := container.Template{Name: "busybox", Runtime: container.RuntimeDocker, Image: "busybox:1",
		Env: map[string]string{"A": "1"}, UserEnv: []string{"B"}, Command: []string{"sleep", "60"}}
	stored, created, err := s.PutTemplate(ctx, tpl)
	if err != nil || !created || stored.Version != 1 {
		t.Fatalf("PutTemplate(new) = %+v, %v, %v", stored, created, err)
	}
	tpl.Image = "busybox:2"
	stored, created, err = s.PutTemplate(ctx, tpl)
	if err != nil || created || stored.Version != 2 {
		t.Fatalf("PutTemplate(replace) = %+v, %v, %v", stored, created, err)
	}
	got, err := s.GetTemplate(ctx, "busybox")
	if err != nil || got.Image != "busybox:2" || got.Env["A"] != "1" || !slices.Equal(got.UserEnv, []string{"B"}) || got.Version != 2 {
		t.Fatalf("GetTemplate = %+v, %v", got, err)
	}
	if _, _, err := s.PutTemplate(ctx, container.Template{Name: "alpine", Runtime: container.RuntimeDocker, Image: "alpine"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alpine" || list[1].Name != "busybox" {
		t.Fatalf("ListTemplates = %+v, %v", list, err)
	}
	if err := s.DeleteTemplate(ctx, "alpine"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteTemplate twice", s.DeleteTemplate(ctx, "alpine"), store.ErrNotFound)
	_, err = s.GetTemplate(ctx, "alpine")
	wantErr(t, "GetTemplate(deleted)", err, store.ErrNotFound)
}

func testIdempotency(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	rec := store.IdempotencyRecord{Owner: "alice", Key: "k", RequestHash: "h",
		Response: []byte(`{"status":202,"headers":{"Location":"/x"},"body":{"a":1}}`), CreatedAt: c.Now()}
	if _, err := s.PutIdempotency(ctx, rec); err != nil {
		t.Fatal(err)
	}
	other := rec
	other.RequestHash = "h2"
	existing, err := s.PutIdempotency(ctx, other)
	wantErr(t, "PutIdempotency(again)", err, store.ErrAlreadyExists)
	if existing.RequestHash != "h" || string(existing.Response) != string(rec.Response) {
		t.Fatalf("existing record = %+v", existing)
	}
	_, err = s.GetIdempotency(ctx, "bob", "k")
	wantErr(t, "GetIdempotency(other owner)", err, store.ErrNotFound)
	c.Advance(store.IdempotencyRetention + time.Second)
	_, err = s.GetIdempotency(ctx, "alice", "k")
	wantErr(t, "GetIdempotency(expired)", err, store.ErrNotFound)
	other.CreatedAt = c.Now()
	if _, err := s.PutIdempotency(ctx, other); err != nil {
		t.Fatalf("PutIdempotency after expiry: %v", err)
	}
}
