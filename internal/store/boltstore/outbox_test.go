package boltstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

func TestOutboxLifecycle(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	var ids []string
	for range 3 {
		p := createParams(newInstance("alice"))
		p.Outbox.CreatedAt = clock.Now()
		if _, err := s.CreateInstance(ctx, p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Outbox.ID)
		clock.Advance(time.Second)
	}
	// Oldest first, strictly before the bound.
	got, err := s.ListUndispatched(ctx, clock.Now().Add(-time.Second), 10)
	if err != nil || len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[1] {
		t.Fatalf("undispatched = %+v, %v; want the first two", got, err)
	}
	if got, _ := s.ListUndispatched(ctx, clock.Now(), 1); len(got) != 1 || got[0].ID != ids[0] {
		t.Fatalf("limit 1 = %+v", got)
	}

	at := clock.Now()
	if err := s.MarkDispatched(ctx, ids[0], at); err != nil {
		t.Fatal(err)
	}
	ob, _ := s.GetOutbox(ctx, ids[0])
	if ob.State != container.OutboxDispatched || ob.DispatchedAt == nil || !ob.DispatchedAt.Equal(at) {
		t.Fatalf("dispatched item = %+v", ob)
	}
	if err := s.MarkAttempt(ctx, ids[0], 1, "boom", at); err != nil {
		t.Fatal(err)
	}
	ob, _ = s.GetOutbox(ctx, ids[0])
	if ob.State != container.OutboxDispatched || ob.Attempts != 1 || ob.LastError != "boom" {
		t.Fatalf("after attempt = %+v", ob)
	}
	if err := s.MarkDone(ctx, ids[0], at); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDispatched(ctx, ids[0], at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, ids[0], 5, "late", at); err != nil {
		t.Fatal(err)
	}
	if ob, _ = s.GetOutbox(ctx, ids[0]); ob.State != container.OutboxDone {
		t.Fatalf("done item moved to %s", ob.State)
	}
	if err := s.MarkFailed(ctx, ids[1], 3, "gave up", at); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListUndispatched(ctx, clock.Now().Add(time.Hour), 10); len(got) != 1 || got[0].ID != ids[2] {
		t.Fatalf("undispatched after marks = %+v, want only the third", got)
	}
	for _, mark := range []func() error{
		func() error { return s.MarkDispatched(ctx, "nope", at) },
		func() error { return s.MarkDone(ctx, "nope", at) },
		func() error { return s.MarkAttempt(ctx, "nope", 1, "", at) },
		func() error { return s.MarkFailed(ctx, "nope", 1, "", at) },
	} {
		if err := mark(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("mark of unknown item: %v, want ErrNotFound", err)
		}
	}

	// Done items expire OutboxRetention after they were done.
	clock.Advance(store.OutboxRetention)
	if _, err := s.GetOutbox(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired done item: %v", err)
	}
	st, err := s.Purge(ctx, clock.Now())
	if err != nil || st.OutboxItems != 1 {
		t.Fatalf("purge = %+v, %v", st, err)
	}
	if _, err := s.GetOutbox(ctx, ids[1]); err != nil {
		t.Errorf("failed items do not expire: %v", err)
	}
}
