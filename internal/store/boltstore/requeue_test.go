package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
)

func TestRequeueDispatched(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	s, err := Open(filepath.Join(t.TempDir(), "b.db"), Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := 0; i < 3; i++ {
		p := storetest.NewCreate(clock, "alice")
		if _, err := s.CreateInstance(ctx, p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Outbox.ID)
	}
	for _, id := range ids[:2] {
		if err := s.MarkDispatched(ctx, id, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkDone(ctx, ids[1], clock.Now()); err != nil {
		t.Fatal(err)
	}
	n, err := s.RequeueDispatched(ctx)
	if err != nil || n != 1 {
		t.Fatalf("RequeueDispatched = %d, %v; want 1", n, err)
	}
	items, err := s.ListUndispatched(ctx, clock.Now().Add(time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != ids[0] || items[1].ID != ids[2] {
		t.Fatalf("undispatched after requeue: %+v", items)
	}
	if ob, _ := s.GetOutbox(ctx, ids[1]); ob.State != container.OutboxDone {
		t.Fatalf("done item touched: %+v", ob)
	}
}

// dispatchedIndexed counts the entries of idx_dispatched.
func dispatchedIndexed(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.view(context.Background(), "count", func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketDispatched).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// The dispatched index holds exactly the items in flight: finished items
// (kept for OutboxRetention, the bulk of a busy outbox) leave it, so the
// start-up requeue never reads them, and an item purged while dispatched
// takes its entry with it.
func TestDispatchedIndexHoldsOnlyItemsInFlight(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	var ids []string
	for range 3 {
		in := mustCreate(t, s, newInstance("alice"))
		items, err := s.ListUndispatched(ctx, clock.Now().Add(time.Second), 10)
		if err != nil || len(items) == 0 {
			t.Fatalf("outbox item of %s: %v %v", in.ID, items, err)
		}
		id := items[len(items)-1].ID
		if err := s.MarkDispatched(ctx, id, clock.Now()); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n := dispatchedIndexed(t, s); n != 3 {
		t.Fatalf("%d indexed after three dispatches, want 3", n)
	}
	if err := s.MarkDone(ctx, ids[0], clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, ids[1], 5, "gave up", clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := dispatchedIndexed(t, s); n != 1 {
		t.Fatalf("%d indexed with one item in flight, want 1", n)
	}
	clock.Advance(store.OutboxMaxAge)
	if st, err := s.Purge(ctx, clock.Now()); err != nil || st.OutboxItems != 3 {
		t.Fatalf("purge = %+v, %v; want all three items", st, err)
	}
	if n := dispatchedIndexed(t, s); n != 0 {
		t.Fatalf("%d indexed after the purge, want 0", n)
	}
}

// A file written before idx_dispatched existed gets the index built at Open,
// so its dispatched items are still requeued.
func TestOpenIndexesDispatchedItemsOfAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	clock := storetest.NewClock()
	s, err := Open(path, Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		p := storetest.NewCreate(clock, "alice")
		if _, err := s.CreateInstance(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDispatched(ctx, p.Outbox.ID, clock.Now()); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Outbox.ID)
	}
	if err := s.MarkDone(ctx, ids[1], clock.Now()); err != nil {
		t.Fatal(err)
	}
	// What an older build left: no index bucket at all.
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketDispatched) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{Clock: clock.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := dispatchedIndexed(t, s); n != 1 {
		t.Fatalf("%d indexed after reopening, want the one dispatched item", n)
	}
	if n, err := s.RequeueDispatched(ctx); err != nil || n != 1 {
		t.Fatalf("RequeueDispatched = %d, %v; want 1", n, err)
	}
	if ob, err := s.GetOutbox(ctx, ids[0]); err != nil || ob.State != container.OutboxPending {
		t.Fatalf("dispatched item after requeue: %+v, %v; want pending", ob, err)
	}
}
