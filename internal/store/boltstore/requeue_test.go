package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
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
