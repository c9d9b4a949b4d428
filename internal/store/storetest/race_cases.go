package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
