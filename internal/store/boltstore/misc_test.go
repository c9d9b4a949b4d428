package boltstore

import (
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func TestTemplates(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	got, created, err := s.PutTemplate(ctx, container.Template{Name: "nginx", Image: "nginx:1", Version: 41})
	if err != nil || !created || got.Version != 1 || got.UpdatedAt != clock.Now().Format(time.RFC3339) {
		t.Fatalf("first put = %+v, %v, %v", got, created, err)
	}
	got, created, err = s.PutTemplate(ctx, container.Template{Name: "nginx", Image: "nginx:2"})
	if err != nil || created || got.Version != 2 {
		t.Fatalf("second put = %+v, %v, %v", got, created, err)
	}
	if _, _, err := s.PutTemplate(ctx, container.Template{Name: "alpine"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alpine" || list[1].Image != "nginx:2" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := s.DeleteTemplate(ctx, "nginx"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, "nginx"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := s.GetTemplate(ctx, "nginx"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get deleted: %v", err)
	}
}

func TestIdempotencyExpires(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	rec := store.IdempotencyRecord{Owner: "alice", Key: "k", Response: []byte(`{"id":"x"}`)}
	if _, err := s.PutIdempotency(ctx, rec); err != nil {
		t.Fatal(err)
	}
	again := rec
	again.Response = []byte(`{"id":"y"}`)
	existing, err := s.PutIdempotency(ctx, again)
	if !errors.Is(err, store.ErrAlreadyExists) || string(existing.Response) != `{"id":"x"}` {
		t.Fatalf("repeat = %+v, %v", existing, err)
	}
	if _, err := s.GetIdempotency(ctx, "bob", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other owner: %v", err)
	}
	clock.Advance(store.IdempotencyRetention)
	if _, err := s.GetIdempotency(ctx, "alice", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired: %v", err)
	}
	if _, err := s.PutIdempotency(ctx, again); err != nil {
		t.Fatalf("put over an expired record: %v", err)
	}
	// The first record's expiry entry is due now but must not remove the
	// new record.
	st, err := s.Purge(ctx, clock.Now())
	if err != nil || st.IdempotencyKeys != 0 {
		t.Fatalf("purge = %+v, %v", st, err)
	}
	if got, err := s.GetIdempotency(ctx, "alice", "k"); err != nil || string(got.Response) != `{"id":"y"}` {
		t.Errorf("new record after purge = %+v, %v", got, err)
	}
}

func TestRepairAdmission(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	mustCreate(t, s, newInstance("alice"))
	b := mustCreate(t, s, newInstance("alice"))
	mustTransition(t, s, b, fsm.Creating)
	c := mustCreate(t, s, newInstance("alice"))
	mustTransition(t, s, c, fsm.Failed)
	if err := s.update(ctx, "corrupt", func(tx *bolt.Tx) error { return setAdmission(tx, 17) }); err != nil {
		t.Fatal(err)
	}
	before, after, err := s.RepairAdmission(ctx)
	if err != nil || before != 17 || after != 2 {
		t.Fatalf("repair = %d, %d, %v; want 17, 2", before, after, err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 2 {
		t.Errorf("count after repair = %d", n)
	}
}

func TestClosedAndCancelled(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.GetInstance(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetInstance(context.Background(), "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("closed store: %v, want ErrUnavailable", err)
	}
}
