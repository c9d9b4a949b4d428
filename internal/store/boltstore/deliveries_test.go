package boltstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// A file written before idx_webhook existed gets the index built at Open,
// so a subscription's listing still finds its deliveries (and only them:
// not the event bus's, not other operations').
func TestOpenIndexesDeliveriesOfAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := mustCreate(t, s, newInstance("alice"))
	ids := []string{container.NewID(), container.NewID(), container.NewID()}
	var ds []container.OutboxItem
	for i, wh := range []string{"wh-a", container.EventBusTarget, "wh-a"} {
		ds = append(ds, container.OutboxItem{ID: ids[i], Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: wh, From: in.Status, To: in.Status}})
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: in.Version, From: in.Status, To: in.Status,
		Deliveries: ds}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketWebhookIdx) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for wh, want := range map[string][]string{"wh-a": {ids[2], ids[0]}, container.EventBusTarget: nil} {
		page, err := s.ListDeliveries(ctx, wh, "", 10)
		var got []string
		for _, ob := range page.Items {
			got = append(got, ob.ID)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ListDeliveries(%s) after reopening = %v, %v; want %v", wh, got, err, want)
		}
	}
}

// Purge removes an expired delivery's idx_webhook entry with the item; a
// redelivered one, pending again, is kept past its first expiry.
func TestPurgeUnindexesDeliveries(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "b.db"), Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := mustCreate(t, s, newInstance("alice"))
	gone, kept := container.NewID(), container.NewID()
	var ds []container.OutboxItem
	for _, id := range []string{gone, kept} {
		ds = append(ds, container.OutboxItem{ID: id, Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: "wh-a", From: in.Status, To: in.Status}})
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: in.Version, From: in.Status, To: in.Status,
		Deliveries: ds}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{gone, kept} {
		if err := s.MarkDone(ctx, id, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RedeliverOutbox(ctx, kept, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	later := now.Add(store.OutboxRetention + 2*time.Hour)
	if _, err := s.Purge(ctx, later); err != nil {
		t.Fatal(err)
	}
	var keys int
	if err := s.db.View(func(tx *bolt.Tx) error {
		keys = tx.Bucket(bucketWebhookIdx).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if keys != 1 {
		t.Errorf("idx_webhook holds %d keys after the purge; want 1, the redelivered one's", keys)
	}
	if ob, err := s.GetOutbox(ctx, kept); err != nil || ob.State != container.OutboxPending {
		t.Errorf("the redelivered delivery after the purge: %+v, %v; want it pending", ob, err)
	}
}
