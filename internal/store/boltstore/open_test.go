package boltstore

import (
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
