package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// createShare is a create of owner bounded by a total of 6 and a share of
// perOwner.
func createShare(s store.Store, c *Clock, owner string, perOwner int) (container.Instance, error) {
	p := NewCreate(c, owner)
	p.MaxPending, p.MaxPendingPerOwner = 6, perOwner
	return s.CreateInstance(context.Background(), p)
}

// testAdmissionPerOwner: with a share of 2 of a total of 6, 12 concurrent
// creates of one owner take exactly 2 (the rest ErrOwnerQueueFull, which
// is also ErrQueueFull), another owner's are still taken, and the total
// still refuses (ErrQueueFull, not the owner's) when it is reached; leaving
// pending or creating, or a delete, gives the owner's slot back. A share
// of 0 is no share (the default: the total, no change).
func testAdmissionPerOwner(t *testing.T, s store.Store, c *Clock) {
	// No share of its own (0): zed takes 3, more than any share below.
	for range 3 {
		in, err := createShare(s, c, "zed", 0)
		if err != nil {
			t.Fatalf("zed's create without a share: %v", err)
		}
		move(t, s, c, in, fsm.Failed)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var mine []container.Instance
	errs := make(chan error, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := createShare(s, c, "alice", 2)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			mine = append(mine, in)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, store.ErrOwnerQueueFull) || !errors.Is(err, store.ErrQueueFull) {
			t.Fatalf("alice's create beyond her share: %v; want ErrOwnerQueueFull", err)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("12 concurrent creates with a share of 2 took %d", len(mine))
	}
	// bob and carol are still taken while alice is at her share.
	for _, o := range []string{"bob", "bob", "carol", "carol"} {
		if _, err := createShare(s, c, o, 2); err != nil {
			t.Fatalf("%s's create while alice is at her share: %v", o, err)
		}
	}
	// The total (6) is reached: dave is refused by it, not by a share.
	if _, err := createShare(s, c, "dave", 2); !errors.Is(err, store.ErrQueueFull) || errors.Is(err, store.ErrOwnerQueueFull) {
		t.Fatalf("dave's create at the total: %v; want ErrQueueFull alone", err)
	}
	// pending → creating keeps alice's slot; creating → running frees it.
	a := move(t, s, c, mine[0], fsm.Creating)
	if _, err := createShare(s, c, "alice", 2); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("pending → creating freed a slot: %v", err)
	}
	move(t, s, c, a, fsm.Running)
	if _, err := createShare(s, c, "alice", 2); err != nil {
		t.Fatalf("alice's create after one of hers runs: %v", err)
	}
	if _, err := createShare(s, c, "alice", 2); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("alice's third: %v; want refused", err)
	}
	// A delete of a pending instance frees her slot (and the total's).
	b := mine[1]
	if err := s.DeleteInstance(context.Background(), store.DeleteParams{ID: b.ID, ExpectVersion: b.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := createShare(s, c, "alice", 2); err != nil {
		t.Fatalf("alice's create after a delete of a pending one: %v", err)
	}
	if n := admission(t, s); n != 6 {
		t.Fatalf("admission %d, want 6", n)
	}
}
