package boltstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
)

// fakeClock is the store's clock in tests: the conformance suite's, which
// moves only when told to.
type fakeClock = storetest.Clock

func newFakeClock() *fakeClock { return storetest.NewClock() }

// openTest opens a fresh store in t's temp dir and closes it at cleanup.
func openTest(t testing.TB) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s, err := Open(filepath.Join(t.TempDir(), "berth.db"), Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

func newInstance(owner string) container.Instance {
	return container.Instance{
		ID:       container.NewID(),
		Name:     "web",
		Owner:    owner,
		Template: "nginx",
		Labels:   map[string]string{"team": "a"},
		Runtime:  container.RuntimeDocker,
		Image:    "nginx:1",
		Status:   fsm.Pending,
		Version:  1,
		Spec: container.Spec{
			Runtime: container.RuntimeDocker,
			Image:   "nginx:1",
			Env:     map[string]string{"SECRET": "s3cr3t"},
		},
	}
}

func createParams(in container.Instance) store.CreateParams {
	return store.CreateParams{
		Instance: in,
		Outbox: container.OutboxItem{
			ID: container.NewID(), InstanceID: in.ID, Op: container.OpCreate,
			InstanceVersion: 1, State: container.OutboxPending,
		},
		Event: container.Event{Type: container.EventCreateRequested, To: fsm.Pending},
	}
}

func mustCreate(t testing.TB, s *Store, in container.Instance) container.Instance {
	t.Helper()
	got, err := s.CreateInstance(context.Background(), createParams(in))
	if err != nil {
		t.Fatalf("create %s: %v", in.ID, err)
	}
	return got
}

func mustTransition(t testing.TB, s *Store, in container.Instance, to fsm.Status) container.Instance {
	t.Helper()
	got, err := s.Transition(context.Background(), store.TransitionParams{
		ID: in.ID, ExpectVersion: in.Version, From: in.Status, To: to,
		Event: &container.Event{Type: "T", From: in.Status, To: to},
	})
	if err != nil {
		t.Fatalf("transition %s %s→%s: %v", in.ID, in.Status, to, err)
	}
	return got
}
