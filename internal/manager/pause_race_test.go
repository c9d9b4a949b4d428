package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
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

// TestPauseRaces is the seeded property of pause and resume on both
// stores: a running or paused instance under a lifetime is raced by users
// asking to pause and resume it (each accepted request followed by its
// worker's Frozen, as the worker carries it out), by the state loop
// reporting the container paused or resumed, by a user's stop or delete,
// and by its lifetime's expiry. Whoever wins: no history breaks an FSM rule
// or records a TransitionRejected, no pause or resume is recorded after a
// stop or delete was asked (the stop or delete stays where it was asked:
// stop_pending, delete_pending), and an instance nobody stopped ends
// running or paused. BERTH_EXPIRY_SEED replays a run; BERTH_RACE_ROUNDS sets
// the rounds.
func TestPauseRaces(t *testing.T) {
	seed, rounds := raceSeed(t)
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		clk := &lifetimeClock{}
		clk.ns.Store(time.Now().UnixNano())
		st := b.Open(t, clk.Now)
		m := manager.New(manager.Options{Store: st, Clock: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		root := identity.Caller{User: "root", Admin: true}
		if _, _, err := m.PutTemplate(context.Background(), root, container.Template{Name: "pausable", Runtime: "docker", Image: "x",
			Lifetime: &container.Lifetime{Default: "1m", Max: "1h", OnExpiry: container.ExpiryStop}}); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 3))
		for round := range rounds {
			pauseRound(t, fmt.Sprintf("round %d", round), rng, clk, st, m)
		}
	})
}

// pauseRound is one instance's race.
func pauseRound(t *testing.T, round string, rng *rand.Rand, clk *lifetimeClock, st store.Store, m *manager.Manager) {
	ctx := context.Background()
	alice := identity.Caller{User: "alice"}
	res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "pausable"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} { // the workers' part
		at := clk.Now()
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
			Update: func(i *container.Instance) { i.StartedAt = &at },
			Event:  &container.Event{Type: "Test" + string(to), From: inst.Status, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	startPaused := rng.IntN(2) == 0
	if startPaused {
		if _, err := m.Pause(ctx, alice, inst.ID, nil, ""); err != nil {
			t.Fatal(err)
		}
		if err := m.Frozen(ctx, inst.ID, "", true, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	move := []string{"stop", "delete", "expire", "none"}[rng.IntN(4)]
	if move == "expire" {
		clk.Advance(time.Minute + time.Second)
	}
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	for range 1 + rng.IntN(3) {
		pause := rng.IntN(2) == 0
		wg.Go(func() {
			<-startGun
			pauseAndCarryOut(t, round, m, alice, inst.ID, pause)
		})
	}
	observed := []manager.ObservationKind{manager.ObservedPaused, manager.ObservedResumed}[rng.IntN(2)]
	wg.Go(func() {
		<-startGun
		if _, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: observed}); err != nil && !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: OnEvent %s: %v", round, observed, err)
		}
	})
	wg.Go(func() {
		<-startGun
		switch move {
		case "expire":
			cur, err := st.GetInstance(ctx, inst.ID)
			if err != nil || cur.ExpiresAt == nil {
				t.Errorf("%s: no expiry to race: %v", round, err)
				return
			}
			if _, err := m.Expire(ctx, inst.ID, *cur.ExpiresAt); err != nil && !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: Expire: %v", round, err)
			}
		default:
			userMove(t, round, move, alice, inst.ID, m)
		}
	})
	close(startGun)
	wg.Wait()
	checkPauseRound(t, fmt.Sprintf("%s (paused=%v, %s, observed %s)", round, startPaused, move, observed), st, inst.ID, move)
}

// pauseAndCarryOut asks for a pause (resume) and, when accepted, does what
// its worker does with it: Frozen, which applies only while the instance is
// still where the request found it.
func pauseAndCarryOut(t *testing.T, round string, m *manager.Manager, c identity.Caller, id string, pause bool) {
	ctx := context.Background()
	call := m.Pause
	if !pause {
		call = m.Resume
	}
	res, err := call(ctx, c, id, nil, "")
	var se *manager.StateError
	switch {
	case errors.As(err, &se), errors.Is(err, store.ErrConflict):
		return
	case err != nil:
		t.Errorf("%s: pause=%v: %v", round, pause, err)
		return
	case !res.Enqueued:
		return
	}
	if err := m.Frozen(ctx, id, "", pause, time.Time{}); err != nil && !errors.Is(err, manager.ErrMoved) && !errors.Is(err, store.ErrConflict) {
		t.Errorf("%s: Frozen pause=%v: %v", round, pause, err)
	}
}

// checkPauseRound holds the round's outcome to the property.
func checkPauseRound(t *testing.T, round string, st store.Store, id, move string) {
	evs := history(t, st, id)
	f := eventcheck.Check(id, evs)
	if len(f.Violations) > 0 || len(f.Rejected) > 0 {
		t.Errorf("%s: FSM violations %v, rejected %v", round, f.Violations, f.Rejected)
	}
	ended := ""
	for _, ev := range evs {
		switch ev.Type {
		case container.EventStopRequested, container.EventDeleteRequested:
			ended = ev.Type
		case container.EventPaused, container.EventResumed:
			if ended != "" {
				t.Errorf("%s: %s recorded after %s", round, ev.Type, ended)
			}
		}
	}
	cur, err := st.GetInstance(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]fsm.Status{"stop": {fsm.StopPending}, "expire": {fsm.StopPending}, "delete": {fsm.DeletePending},
		"none": {fsm.Running, fsm.Paused}}[move]
	ok := false
	for _, s := range want {
		ok = ok || cur.Status == s
	}
	if !ok {
		t.Errorf("%s: ends %s, want one of %v", round, cur.Status, want)
	}
}
