package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestRetentionRaces is the seeded property of retentions on both stores:
// a stopped or failed instance whose delete_at is reached is raced by
// several deleters at once (timers firing twice, the reconciler) and by a
// user's delete, start or nothing. Whoever wins, it is deleted once at
// most, never missed (once the racers are done it is being deleted, or a
// start cleared its delete_at), and its history breaks no FSM rule.
// BERTH_EXPIRY_SEED replays a run; BERTH_RACE_ROUNDS sets the rounds
// (raceRounds: `make chaos` runs many more).
func TestRetentionRaces(t *testing.T) {
	seed, rounds := raceSeed(t)
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		clk := &lifetimeClock{}
		clk.ns.Store(time.Now().UnixNano())
		st := b.Open(t, clk.Now)
		m := manager.New(manager.Options{Store: st, Clock: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if _, _, err := m.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true}, container.Template{Name: "kept",
			Runtime: "docker", Image: "x", Retention: &container.Retention{Stopped: "1m", Failed: "2m"}}); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for round := range rounds {
			retentionRound(t, fmt.Sprintf("round %d", round), rng, clk, st, m)
		}
	})
}

// retentionRound is one ended instance's race at its delete_at.
func retentionRound(t *testing.T, round string, rng *rand.Rand, clk *lifetimeClock, st store.Store, m *manager.Manager) {
	ctx := context.Background()
	alice := identity.Caller{User: "alice"}
	end := []fsm.Status{fsm.Stopped, fsm.Failed}[rng.IntN(2)]
	move := []string{"delete", "start", "none"}[rng.IntN(3)]
	if end == fsm.Failed && move == "start" {
		move = "none" // a failed instance cannot be started
	}
	res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "kept"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running, end} { // the workers' part
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
			Event: &container.Event{Type: "Test" + string(to), From: inst.Status, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	at, ok := manager.Deadline(inst)
	if !ok || inst.DeleteAt == nil || !at.Equal(*inst.DeleteAt) {
		t.Fatalf("%s: %s with delete_at %v, deadline %v %v", round, end, inst.DeleteAt, at, ok)
	}
	clk.Advance(2*time.Minute + time.Duration(rng.IntN(1000))*time.Millisecond)

	var acted atomic.Int32
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	for range 1 + rng.IntN(3) {
		wg.Go(func() {
			<-startGun
			out, err := m.Expire(ctx, inst.ID, at)
			if err != nil && !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: Expire: %v", round, err)
			}
			if out == manager.ExpiryActed {
				acted.Add(1)
			}
		})
	}
	wg.Go(func() {
		<-startGun
		userMove(t, round, move, alice, inst.ID, m)
	})
	close(startGun)
	wg.Wait()
	checkRetentionRound(t, fmt.Sprintf("%s (%s, %s)", round, end, move), st, inst.ID, int(acted.Load()))
}

// checkRetentionRound holds the round's outcome to the property.
func checkRetentionRound(t *testing.T, round string, st store.Store, id string, acted int) {
	ctx := context.Background()
	evs := history(t, st, id)
	deletes := 0
	for _, ev := range evs {
		if ev.Message == container.ReasonRetentionReached {
			deletes++
		}
	}
	if f := eventcheck.Check(id, evs); len(f.Violations) > 0 {
		t.Errorf("%s: FSM violations %v", round, f.Violations)
	}
	if deletes > 1 || deletes != acted {
		t.Errorf("%s: %d retention deletes, %d deleters acted; want them equal and at most 1", round, deletes, acted)
	}
	cur, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cur.Status == fsm.DeletePending:
		// deleted by the retention or by alice
	case cur.Status == fsm.StartPending && cur.DeleteAt == nil:
		// started again first: nothing left to delete
	default:
		t.Errorf("%s: missed: the instance is %s, delete_at %v, %d deletes", round, cur.Status, cur.DeleteAt, deletes)
	}
}
