package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// lifetimeClock is the one clock of the store and the manager, moved by
// the test past expiries.
type lifetimeClock struct{ ns atomic.Int64 }

func (c *lifetimeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *lifetimeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestExpiryRaces is the seeded property of expiries on both stores: an
// instance whose lifetime is reached is raced by several expirers at once
// (timers firing twice, the reconciler) and by a user's stop, delete,
// start, extension, its group's finish (whose policy stops it) or nothing. Whoever wins, the expiry is acted on at
// most once, never missed (once the racers are done, the instance is
// ended or being ended, or lives under a later expires_at that a start or
// extension gave it), and its history breaks no FSM rule.
// BERTH_EXPIRY_SEED replays a run; BERTH_RACE_ROUNDS sets the rounds
// (raceRounds: `make chaos` runs many more).
func TestExpiryRaces(t *testing.T) {
	seed, rounds := raceSeed(t)
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		clk := &lifetimeClock{}
		clk.ns.Store(time.Now().UnixNano())
		st := b.Open(t, clk.Now)
		m := manager.New(manager.Options{Store: st, Clock: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Groups: manager.GroupPolicies{OnFinished: config.CleanupStop}})
		root := identity.Caller{User: "root", Admin: true}
		for _, mode := range []string{container.ExpiryStop, container.ExpiryDelete} {
			if _, _, err := m.PutTemplate(context.Background(), root, container.Template{Name: "life-" + mode, Runtime: "docker", Image: "x",
				Lifetime: &container.Lifetime{Default: "1m", Max: "1h", OnExpiry: mode}}); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		for round := range rounds {
			expiryRound(t, fmt.Sprintf("round %d", round), rng, clk, st, m)
		}
	})
}

// raceSeed is a race test's seed (BERTH_EXPIRY_SEED replays one) and its
// rounds per store (raceRounds), logged.
func raceSeed(t *testing.T) (uint64, int) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BERTH_EXPIRY_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("BERTH_EXPIRY_SEED: %v", err)
		}
	}
	rounds := raceRounds(t)
	t.Logf("seed %d (BERTH_EXPIRY_SEED replays it), %d rounds per store", seed, rounds)
	return seed, rounds
}

// history is instance id's whole history, oldest first.
func history(t *testing.T, st store.Store, id string) []container.Event {
	var evs []container.Event
	for cursor := ""; ; {
		page, err := st.ListEvents(context.Background(), id, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return evs
		}
	}
}

// raceRounds is how many rounds each store's seeded race runs: 60 (20
// with -short), or BERTH_RACE_ROUNDS (`make chaos` sets it for the long
// run).
func raceRounds(t *testing.T) int {
	if s := os.Getenv("BERTH_RACE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BERTH_RACE_ROUNDS=%q: want a positive count", s)
		}
		return n
	}
	if testing.Short() {
		return 20
	}
	return 60
}

// The user's moves an expiry is raced with.
var userMoves = []string{"stop", "delete", "start", "extend", "finish", "none"}

// expiryRound is one instance's race at its expiry.
func expiryRound(t *testing.T, round string, rng *rand.Rand, clk *lifetimeClock, st store.Store, m *manager.Manager) {
	ctx := context.Background()
	alice := identity.Caller{User: "alice"}
	mode := []string{container.ExpiryStop, container.ExpiryDelete}[rng.IntN(2)]
	move := userMoves[rng.IntN(len(userMoves))]
	expirers := 1 + rng.IntN(3)
	group := "g-" + strings.ReplaceAll(round, " ", "-")
	res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "life-" + mode, Group: group}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	// The workers' part: made and running (straight through the store).
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
			Event: &container.Event{Type: "Test" + string(to), From: inst.Status, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	at := *inst.ExpiresAt
	clk.Advance(time.Minute + time.Duration(rng.IntN(1000))*time.Millisecond)

	var acted atomic.Int32
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	expire := func() {
		defer wg.Done()
		<-startGun
		out, err := m.Expire(ctx, inst.ID, at)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: Expire: %v", round, err)
		}
		if out == manager.ExpiryActed {
			acted.Add(1)
		}
	}
	for range expirers {
		wg.Add(1)
		go expire()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-startGun
		if move == "finish" {
			if _, err := m.FinishGroup(ctx, alice, "alice", group, "succeeded", ""); err != nil {
				t.Errorf("%s: finish: %v", round, err)
			}
			return
		}
		userMove(t, round, move, alice, inst.ID, m)
	}()
	close(startGun)
	wg.Wait()
	// A timer that fires later (or the reconciler's next pass) finds
	// whatever is left to do.
	if cur, err := st.GetInstance(ctx, inst.ID); err == nil && manager.Expiring(cur) && !clk.Now().Before(*cur.ExpiresAt) && cur.ExpiresAt.Equal(at) {
		if out, err := m.Expire(ctx, inst.ID, at); err != nil {
			t.Errorf("%s: the late Expire: %v", round, err)
		} else if out == manager.ExpiryActed {
			acted.Add(1)
		}
	}
	checkExpiryRound(t, round, mode, move, st, inst.ID, at, int(acted.Load()))
}

// userMove is alice's request; refusals the race makes legitimate (409,
// an ended instance) are part of the game.
func userMove(t *testing.T, round, move string, alice identity.Caller, id string, m *manager.Manager) {
	ctx := context.Background()
	var err error
	switch move {
	case "stop":
		_, err = m.Stop(ctx, alice, id, nil, "")
	case "delete":
		_, err = m.Delete(ctx, alice, id, nil, "")
	case "start":
		_, err = m.Start(ctx, alice, id, nil, "")
	case "extend":
		_, err = m.Extend(ctx, alice, id, manager.ExtendRequest{By: "10m"})
	}
	var se *manager.StateError
	if err != nil && !errors.As(err, &se) && !errors.Is(err, store.ErrConflict) {
		t.Errorf("%s: %s: %v", round, move, err)
	}
}

// checkExpiryRound holds the round's outcome to the property.
func checkExpiryRound(t *testing.T, round, mode, move string, st store.Store, id string, at time.Time, acted int) {
	ctx := context.Background()
	evs := history(t, st, id)
	expiries, renewed := 0, ""
	for _, ev := range evs {
		switch {
		case ev.Message == container.ReasonLifetimeReached && renewed != "":
			t.Errorf("%s (%s, %s): acted on a stale expiry: after %s", round, mode, move, renewed)
			expiries++
		case ev.Message == container.ReasonLifetimeReached:
			expiries++
		case ev.Type == container.EventLifetimeExtended || ev.Type == container.EventStartRequested:
			renewed = ev.Type // the expiry at `at` is no more
		}
	}
	if f := eventcheck.Check(id, evs); len(f.Violations) > 0 {
		t.Errorf("%s (%s, %s): FSM violations %v", round, mode, move, f.Violations)
	}
	if expiries > 1 || expiries != acted {
		t.Errorf("%s (%s, %s): %d expiry events, %d expirers acted; want them equal and at most 1", round, mode, move, expiries, acted)
	}
	cur, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cur.Status == fsm.StopPending || cur.Status == fsm.DeletePending:
		// ended or being ended: by the expiry or by alice
	case cur.ExpiresAt != nil && cur.ExpiresAt.After(at):
		// a start or an extension gave it a later expiry, armed anew
	default:
		t.Errorf("%s (%s, %s): missed: the instance is %s, expires at %v (was %v), %d expiries", round, mode, move, cur.Status, cur.ExpiresAt, at, expiries)
	}
}
