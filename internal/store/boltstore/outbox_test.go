package boltstore

import (
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

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

	// Done and failed items expire OutboxRetention after they finished;
	// Purge removes them.
	clock.Advance(store.OutboxRetention)
	for _, id := range ids[:2] {
		if _, err := s.GetOutbox(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired finished item %s: %v", id, err)
		}
	}
	st, err := s.Purge(ctx, clock.Now())
	if err != nil || st.OutboxItems != 2 {
		t.Fatalf("purge = %+v, %v; want the done and the failed item", st, err)
	}
	// The pending one goes at OutboxMaxAge, with its index entry.
	clock.Advance(store.OutboxMaxAge)
	if st, err := s.Purge(ctx, clock.Now()); err != nil || st.OutboxItems != 1 {
		t.Fatalf("purge at OutboxMaxAge = %+v, %v; want the pending item", st, err)
	}
	_ = s.view(ctx, "count", func(tx *bolt.Tx) error {
		for name, b := range map[string][]byte{"outbox": bucketOutbox, "undispatched index": bucketUndispatched, "expiry": bucketExpiry} {
			if n := tx.Bucket(b).Stats().KeyN; n != 0 {
				t.Errorf("%d entries left in the %s bucket, want 0", n, name)
			}
		}
		return nil
	})
}
