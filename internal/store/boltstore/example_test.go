package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// A create writes the instance and its outbox item in one transaction, so
// the request cannot be lost between them; every later change is a
// transition guarded by the version the caller read: a writer that read
// an older version gets ErrConflict and writes nothing, and reads again.
func ExampleStore_Transition() {
	dir, err := os.MkdirTemp("", "berth-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := boltstore.Open(filepath.Join(dir, "berth.db"), boltstore.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()

	created, err := s.CreateInstance(ctx, store.CreateParams{
		Instance: container.Instance{ID: "i1", Owner: "alice", Template: "web"},
		Outbox:   container.OutboxItem{ID: "o1", Op: container.OpCreate},
		Event:    container.Event{Type: container.EventCreateRequested, To: fsm.Pending},
	})
	if err != nil {
		panic(err)
	}
	item, err := s.GetOutbox(ctx, "o1")
	if err != nil {
		panic(err)
	}
	fmt.Println(created.Status, created.Version, "outbox:", item.Op, item.State)

	// The worker claims the create at the version it read.
	claimed, err := s.Transition(ctx, store.TransitionParams{
		ID: "i1", ExpectVersion: created.Version, From: fsm.Pending, To: fsm.Creating})
	if err != nil {
		panic(err)
	}
	fmt.Println(claimed.Status, claimed.Version)

	// A second writer that read version 1 loses, whatever it wanted.
	_, err = s.Transition(ctx, store.TransitionParams{
		ID: "i1", ExpectVersion: created.Version, From: fsm.Pending, To: fsm.Failed})
	fmt.Println(errors.Is(err, store.ErrConflict))
	// Output:
	// pending 1 outbox: create pending
	// creating 2
	// true
}
