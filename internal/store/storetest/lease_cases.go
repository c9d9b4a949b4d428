package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store"
)

// testLeases: a key's n leases go to n holders and no more; a holder
// taking again renews its own; a released or expired lease is taken
// again; a release by a holder that lost its lease leaves the new
// holder's alone; another key is not affected.
func testLeases(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	now := clock.Now()
	until := now.Add(30 * time.Second)
	a, ok, err := s.TakeLease(ctx, "alice", "d1", 2, until, now)
	if err != nil || !ok {
		t.Fatalf("first lease: %v %v", ok, err)
	}
	again, ok, err := s.TakeLease(ctx, "alice", "d1", 2, until, now)
	if err != nil || !ok || again != a {
		t.Fatalf("d1 again: %+v %v %v, want its own %+v", again, ok, err, a)
	}
	if _, ok, err := s.TakeLease(ctx, "alice", "d2", 2, until, now); err != nil || !ok {
		t.Fatalf("second lease: %v %v", ok, err)
	}
	if _, ok, err := s.TakeLease(ctx, "alice", "d3", 2, until, now); err != nil || ok {
		t.Fatalf("third of 2 leases: ok=%v err=%v, want refused", ok, err)
	}
	if _, ok, err := s.TakeLease(ctx, "bob", "d3", 2, until, now); err != nil || !ok {
		t.Fatalf("bob's lease while alice's are held: %v %v", ok, err)
	}
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatalf("second release: %v", err)
	}
	d3, ok, err := s.TakeLease(ctx, "alice", "d3", 2, until, now)
	if err != nil || !ok {
		t.Fatalf("lease after a release: %v %v", ok, err)
	}
	// Both of alice's leases run out: a crashed holder's lease is taken.
	later := until.Add(time.Second)
	stolen, ok, err := s.TakeLease(ctx, "alice", "d4", 1, later.Add(time.Minute), later)
	if err != nil || !ok {
		t.Fatalf("lease after expiry: %v %v", ok, err)
	}
	if stolen.Slot == d3.Slot {
		if err := s.ReleaseLease(ctx, d3); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.TakeLease(ctx, "alice", "d5", 1, later.Add(time.Minute), later); err != nil || ok {
		t.Fatalf("d4's lease was released by d3, which lost it: ok=%v err=%v", ok, err)
	}
}

// testLeasesRace: 16 concurrent holders of one key's 3 leases: at most 3
// are ever held at once, and every one is taken again after its release.
func testLeasesRace(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	const n, holders = 3, 16
	now := clock.Now()
	var held, peak, taken atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, holders)
	for i := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				l, ok, err := s.TakeLease(ctx, "k", fmt.Sprintf("h%d", i), n, now.Add(time.Minute), now)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue
				}
				taken.Add(1)
				c := held.Add(1)
				for p := peak.Load(); c > p; p = peak.Load() {
					if peak.CompareAndSwap(p, c) {
						break
					}
				}
				held.Add(-1)
				if err := s.ReleaseLease(ctx, l); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if peak.Load() > n || taken.Load() == 0 {
		t.Fatalf("peak %d leases held (max %d), %d taken", peak.Load(), n, taken.Load())
	}
	for i := range n {
		if _, ok, err := s.TakeLease(ctx, "k", fmt.Sprintf("after%d", i), n, now.Add(time.Minute), now); err != nil || !ok {
			t.Fatalf("lease %d after every release: %v %v", i, ok, err)
		}
	}
}
