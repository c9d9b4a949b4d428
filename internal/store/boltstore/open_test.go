package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// bbolt's flock is per open file description, so a second Open in the same
// process stands in for a second process here.
func TestSecondOpenFailsWithErrLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "berth.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{OpenTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if _, err := Open(path, Options{OpenTimeout: -1}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open without waiting: %v, want ErrLocked", err)
	}
}

// A store bulk-loaded with NoSync is an ordinary file once closed: the next
// Open (with syncing) reads what was written.
func TestNoSyncStoreReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "berth.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	in := mustCreate(t, s, newInstance("alice"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetInstance(context.Background(), in.ID)
	if err != nil || got.Owner != "alice" {
		t.Fatalf("after reopening: %+v, %v; want alice's instance %s", got, err, in.ID)
	}
}
