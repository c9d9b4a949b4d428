package boltstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// A file written before idx_node_bucket existed gets the index built at
// Open: its active instances are listed in their buckets, its ended ones
// in none.
func TestOpenIndexesNodeBucketsOfAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	active := mustTransition(t, s, mustCreate(t, s, newInstance("alice")), fsm.Creating)
	mustTransition(t, s, active, fsm.Failed)
	active = mustCreate(t, s, newInstance("alice"))
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketNodeBucketIdx) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, _ := store.NodeBucket(active)
	page, err := s.ListActiveInBucket(ctx, b, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range page.Items {
		got = append(got, in.ID)
	}
	if !slices.Equal(got, []string{active.ID}) {
		t.Fatalf("bucket %d after reopening: %v, want [%s]", b, got, active.ID)
	}
}
