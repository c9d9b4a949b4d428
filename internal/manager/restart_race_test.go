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

// TestRestartRaces is the seeded property of restarts in backoff on both
// stores: a running instance whose exit its policy answered (restart_at
// set by the state loop) is raced, once restart_at has passed, by several
// restarters at once (timers firing twice, the reconciler), by a user's
// stop, delete, start or nothing, and, half the time, by its lifetime's
// expiry falling at the same moment. Whoever wins: berth asks for the
// restart's start once at most and never after a user's stop or delete or
// an expiry, nothing is missed (once the racers are done the instance is
// being started, stopped or deleted), and its history breaks no FSM rule.
// BERTH_EXPIRY_SEED replays a run; BERTH_RACE_ROUNDS sets the rounds.
func TestRestartRaces(t *testing.T) {
	seed, rounds := raceSeed(t)
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		clk := &lifetimeClock{}
		clk.ns.Store(time.Now().UnixNano())
		st := b.Open(t, clk.Now)
		m := manager.New(manager.Options{Store: st, Clock: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		root := identity.Caller{User: "root", Admin: true}
		for _, life := range []string{"", "1m"} {
			tpl := container.Template{Name: "flaky" + life, Runtime: "docker", Image: "x",
				Restart: &container.Restart{Policy: container.RestartOnFailure, Backoff: "1m", MaxBackoff: "1m"}}
			if life != "" {
				tpl.Lifetime = &container.Lifetime{Default: life}
			}
			if _, _, err := m.PutTemplate(context.Background(), root, tpl); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(seed, 2))
		for round := range rounds {
			restartRound(t, fmt.Sprintf("round %d", round), rng, clk, st, m)
		}
	})
}

// restartRound is one instance's race at its restart_at.
func restartRound(t *testing.T, round string, rng *rand.Rand, clk *lifetimeClock, st store.Store, m *manager.Manager) {
	ctx := context.Background()
	alice := identity.Caller{User: "alice"}
	move := []string{"stop", "delete", "start", "none"}[rng.IntN(4)]
	tpl := []string{"flaky", "flaky1m"}[rng.IntN(2)]
	res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: tpl}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} { // the workers' part
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
			Event: &container.Event{Type: "Test" + string(to), From: inst.Status, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	code := 3
	clk.Advance(time.Second) // the exit, after the lifetime began: the expiry falls just before the restart
	if _, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedExited, ExitCode: &code, At: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if inst, err = st.GetInstance(ctx, inst.ID); err != nil || inst.RestartAt == nil || inst.Status != fsm.Running {
		t.Fatalf("%s: the exit scheduled no restart: %+v %v", round, inst, err)
	}
	at := *inst.RestartAt
	clk.Advance(time.Minute + time.Duration(rng.IntN(1000))*time.Millisecond)

	var acted atomic.Int32
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	deadlines := []time.Time{at}
	if inst.ExpiresAt != nil {
		deadlines = append(deadlines, *inst.ExpiresAt) // the expiry, due at the same time
	}
	for range 1 + rng.IntN(3) {
		for _, d := range deadlines {
			wg.Go(func() {
				<-startGun
				out, err := m.Expire(ctx, inst.ID, d)
				if err != nil && !errors.Is(err, store.ErrConflict) {
					t.Errorf("%s: Expire: %v", round, err)
				}
				if out == manager.ExpiryActed && d.Equal(at) {
					acted.Add(1)
				}
			})
		}
	}
	wg.Go(func() {
		<-startGun
		userMove(t, round, move, alice, inst.ID, m)
	})
	close(startGun)
	wg.Wait()
	checkRestartRound(t, fmt.Sprintf("%s (%s, %s)", round, tpl, move), st, inst.ID, int(acted.Load()))
}

// checkRestartRound holds the round's outcome to the property.
func checkRestartRound(t *testing.T, round string, st store.Store, id string, acted int) {
	ctx := context.Background()
	evs := history(t, st, id)
	restarts, ended := 0, ""
	for _, ev := range evs {
		switch {
		case ev.Type == container.EventStartRequested && ev.Actor == container.ActorSystem:
			restarts++
			if ended != "" {
				t.Errorf("%s: a restart asked after %s", round, ended)
			}
		case ev.Type == container.EventStopRequested || ev.Type == container.EventDeleteRequested:
			ended = ev.Type
		}
	}
	if f := eventcheck.Check(id, evs); len(f.Violations) > 0 {
		t.Errorf("%s: FSM violations %v", round, f.Violations)
	}
	if restarts > 1 || restarts != acted {
		t.Errorf("%s: %d restarts asked, %d restarters acted; want them equal and at most 1", round, restarts, acted)
	}
	cur, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	switch cur.Status {
	case fsm.StartPending, fsm.StopPending, fsm.DeletePending:
		if cur.RestartAt != nil {
			t.Errorf("%s: %s with restart_at %v still set", round, cur.Status, cur.RestartAt)
		}
	default:
		t.Errorf("%s: missed: the instance is %s, restart_at %v", round, cur.Status, cur.RestartAt)
	}
}
