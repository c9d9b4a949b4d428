package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testRacingTransitions: 50 goroutines race conditional updates of one
// instance for several rounds, while another goroutine appends events.
// Exactly one write wins per version; the others see ErrConflict.
func testRacingTransitions(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := move(t, s, c, move(t, s, c, mustCreate(t, s, NewCreate(c, "alice")), fsm.Creating), fsm.Running)
	const workers, rounds = 50, 4
	var mu sync.Mutex
	winners := map[int64][]int{} // expected version → winning workers
	var appended int
	for round := 0; round < rounds; round++ {
		base := mustGet(t, s, inst.ID)
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, workers+1)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				_, err := s.Transition(ctx, store.TransitionParams{
					ID: base.ID, ExpectVersion: base.Version, From: fsm.Running, To: fsm.Running,
					Update: func(i *container.Instance) { i.StatusReason = fmt.Sprintf("worker %d", w) },
					Event:  &container.Event{Type: "Race", At: c.Now(), Message: fmt.Sprintf("worker %d", w)},
				})
				switch {
				case err == nil:
					mu.Lock()
					winners[base.Version] = append(winners[base.Version], w)
					mu.Unlock()
				case errors.Is(err, store.ErrConflict):
				default:
					errs <- fmt.Errorf("worker %d: %w", w, err)
				}
			}(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := s.AppendEvent(ctx, container.Event{InstanceID: base.ID, Type: "Note", At: c.Now()}); err != nil {
				errs <- fmt.Errorf("append: %w", err)
			}
		}()
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		appended++
		if n := len(winners[base.Version]); n != 1 {
			t.Fatalf("round %d: %d winners at version %d, want exactly 1", round, n, base.Version)
		}
		got := mustGet(t, s, inst.ID)
		if got.Version != base.Version+1 || got.StatusReason != fmt.Sprintf("worker %d", winners[base.Version][0]) {
			t.Fatalf("round %d: stored %d/%q, winner %v", round, got.Version, got.StatusReason, winners[base.Version])
		}
	}
	evs := allEvents(t, s, inst.ID, 100)
	checkGapless(t, evs)
	// create + creating + running + one per round + one append per round.
	if want := 3 + rounds + appended; len(evs) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
}

// testConcurrentCreates: 100 creates race for 10 admission slots.
func testConcurrentCreates(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	const total, max = 100, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, full := 0, 0
	errs := make(chan error, total)
	start := make(chan struct{})
	for i := 0; i < total; i++ {
		p := NewCreate(c, fmt.Sprintf("user-%d", i%7))
		p.MaxPending = max
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.CreateInstance(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, store.ErrQueueFull):
				full++
			default:
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("unexpected create error: %v", err)
	}
	if accepted != max || full != total-max {
		t.Fatalf("accepted %d, full %d; want %d and %d", accepted, full, max, total-max)
	}
	if n := admission(t, s); n != max {
		t.Fatalf("admission counter %d, want %d", n, max)
	}
	before, after, err := s.RepairAdmission(ctx)
	if err != nil || before != max || after != max {
		t.Fatalf("RepairAdmission = %d, %d, %v", before, after, err)
	}
	got := 0
	for i := 0; i < 7; i++ {
		got += len(allInstances(t, s, store.ListQuery{Owner: fmt.Sprintf("user-%d", i)}))
	}
	if got != max {
		t.Fatalf("%d instances stored, want %d", got, max)
	}
}

// testCreatesAndReleasesInterleaved: creates race for slots while accepted
// creates give theirs back (by leaving creating, by a delete),
// so slots are taken and released all the time and, on a sharded counter,
// on different shards. No moment may see more than max creates holding a
// slot; afterwards the counter is exact, and max slots (not fewer: the
// bound is exact, not approximate) can be taken again. It runs with a bound
// below and above dynamostore's shard count (DefaultAdmissionShards, 8).
func testCreatesAndReleasesInterleaved(max int) func(t *testing.T, s store.Store, c *Clock) {
	return func(t *testing.T, s store.Store, c *Clock) { createsAndReleasesInterleaved(t, s, c, max) }
}

func createsAndReleasesInterleaved(t *testing.T, s store.Store, c *Clock, max int) {
	ctx := context.Background()
	const rounds = 3
	workers := max + 4 // more than the slots, so creates are refused
	var held, peak, accepted atomic.Int64
	errs := make(chan error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			<-start
			for r := range rounds {
				p := NewCreate(c, fmt.Sprintf("user-%d", w%3))
				p.MaxPending = max
				in, err := s.CreateInstance(ctx, p)
				if errors.Is(err, store.ErrQueueFull) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: create: %w", w, r, err)
					return
				}
				accepted.Add(1)
				n := held.Add(1)
				for p := peak.Load(); n > p; p = peak.Load() {
					if peak.CompareAndSwap(p, n) {
						break
					}
				}
				// Still holding its slot in creating; counted free before
				// the release is sent, so held never exceeds what the
				// store holds.
				in, err = step(ctx, s, c, in, fsm.Creating)
				held.Add(-1)
				if err == nil {
					err = release(ctx, s, c, in, r%2 == 0)
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := peak.Load(); p > int64(max) {
		t.Fatalf("%d creates held a slot at once, max %d", p, max)
	}
	if accepted.Load() < int64(max) {
		t.Fatalf("only %d creates accepted of %d", accepted.Load(), workers*rounds)
	}
	if n := admission(t, s); n != 0 {
		t.Fatalf("admission counter %d after every slot was released, want 0", n)
	}
	if before, after, err := s.RepairAdmission(ctx); err != nil || before != 0 || after != 0 {
		t.Fatalf("RepairAdmission = %d, %d, %v; want 0, 0", before, after, err)
	}
	// Every slot is free again: exactly max of a burst get one.
	full := 0
	var mu sync.Mutex
	for range 2 * max {
		p := NewCreate(c, "refill")
		p.MaxPending = max
		wg.Go(func() {
			_, err := s.CreateInstance(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, store.ErrQueueFull) {
				full++
			} else if err != nil {
				t.Errorf("refill create: %v", err)
			}
		})
	}
	wg.Wait()
	if full != max {
		t.Fatalf("%d of %d refill creates refused, want %d", full, 2*max, max)
	}
	if n := admission(t, s); n != max {
		t.Fatalf("admission counter %d after the refill, want %d", n, max)
	}
}

// release gives in's slot back: creating → running, or a delete.
func release(ctx context.Context, s store.Store, c *Clock, in container.Instance, viaDelete bool) error {
	if !viaDelete {
		_, err := step(ctx, s, c, in, fsm.Running)
		return err
	}
	err := s.DeleteInstance(ctx, store.DeleteParams{ID: in.ID, ExpectVersion: in.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}})
	if err != nil {
		return fmt.Errorf("delete %s: %w", in.ID, err)
	}
	return nil
}

// step is move for goroutines: it returns the error instead of failing.
func step(ctx context.Context, s store.Store, c *Clock, in container.Instance, to fsm.Status) (container.Instance, error) {
	next, err := s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: in.Version, From: in.Status, To: to,
		Event: &container.Event{Type: "Test" + string(to), From: in.Status, To: to, At: c.Now()}})
	if err != nil {
		return next, fmt.Errorf("transition %s %s→%s: %w", in.ID, in.Status, to, err)
	}
	return next, nil
}
