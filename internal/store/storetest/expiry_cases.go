package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testLifetimeStored: an instance's expires_at and lifetime are stored
// with it and read back as written, through a create and a transition
// that moves expires_at; a transition that does not touch them keeps them.
func testLifetimeStored(t *testing.T, s store.Store, c *Clock) {
	p := NewCreate(c, "alice")
	exp := c.Now().Add(10 * time.Minute)
	maxAt := c.Now().Add(8 * time.Hour)
	p.Instance.ExpiresAt = &exp
	p.Instance.Lifetime = &container.InstanceLifetime{OnExpiry: container.ExpiryDelete, Default: "10m0s", Max: "8h0m0s", MaxExpiresAt: &maxAt}
	inst := mustCreate(t, s, p)
	got := mustGet(t, s, inst.ID)
	if got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("expires_at %v, want %v", got.ExpiresAt, exp)
	}
	if got.Lifetime == nil || got.Lifetime.OnExpiry != container.ExpiryDelete || got.Lifetime.Max != "8h0m0s" ||
		got.Lifetime.MaxExpiresAt == nil || !got.Lifetime.MaxExpiresAt.Equal(maxAt) {
		t.Fatalf("lifetime %+v, want on_expiry delete, max 8h, max_expires_at %v", got.Lifetime, maxAt)
	}
	got = move(t, s, c, got, fsm.Creating)
	if got = mustGet(t, s, inst.ID); got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("after a transition: expires_at %v, want %v", got.ExpiresAt, exp)
	}
	later := exp.Add(time.Hour)
	if _, err := s.Transition(context.Background(), store.TransitionParams{ID: got.ID, ExpectVersion: got.Version,
		From: got.Status, To: got.Status, Update: func(i *container.Instance) { i.ExpiresAt = &later }}); err != nil {
		t.Fatal(err)
	}
	if got = mustGet(t, s, inst.ID); got.ExpiresAt == nil || !got.ExpiresAt.Equal(later) {
		t.Fatalf("after an extension: expires_at %v, want %v", got.ExpiresAt, later)
	}
	plain := mustCreate(t, s, NewCreate(c, "alice"))
	if got := mustGet(t, s, plain.ID); got.ExpiresAt != nil || got.Lifetime != nil {
		t.Fatalf("an instance without a lifetime reads back with %v %+v", got.ExpiresAt, got.Lifetime)
	}
}

// testExpiryConditional: the action of a reached lifetime
// (TransitionParams.Expiry) is written only while the stored instance
// still expires at that time and that time has come by the store's clock;
// a stale expiry (extended since), an early one, one of an instance with
// no lifetime, and a duplicate all fail with ErrConflict and write
// nothing; of racing expiries of one lifetime exactly one is written.
func testExpiryConditional(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	running := func(t *testing.T, exp *time.Time) container.Instance {
		p := NewCreate(c, "alice")
		p.Instance.ExpiresAt = exp
		inst := mustCreate(t, s, p)
		return move(t, s, c, move(t, s, c, inst, fsm.Creating), fsm.Running)
	}
	expire := func(inst container.Instance, at time.Time) (container.Instance, error) {
		return s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
			To: fsm.StopPending, Expiry: &at, Event: &container.Event{Type: container.EventStopRequested, From: inst.Status,
				To: fsm.StopPending, At: c.Now(), Message: container.ReasonLifetimeReached, Actor: container.ActorSystem}})
	}
	t.Run("reached", func(t *testing.T) {
		exp := c.Now()
		inst := running(t, &exp)
		out, err := expire(inst, exp)
		if err != nil {
			t.Fatalf("expiry at its time: %v", err)
		}
		if out.Status != fsm.StopPending {
			t.Fatalf("status %s, want %s", out.Status, fsm.StopPending)
		}
		// The same expiry again, on the instance as it was read and as
		// it now is: nothing.
		_, err = expire(inst, exp)
		wantErr(t, "a duplicate expiry", err, store.ErrConflict)
		_, err = expire(out, exp)
		wantErr(t, "a duplicate expiry of the instance as it now is", err, store.ErrConflict)
		if got := mustGet(t, s, inst.ID); got.Version != out.Version {
			t.Fatalf("a duplicate expiry wrote: v%d, want v%d", got.Version, out.Version)
		}
	})
	t.Run("stale", func(t *testing.T) {
		exp := c.Now()
		inst := running(t, &exp)
		later := exp.Add(time.Hour)
		ext, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
			To: inst.Status, Update: func(i *container.Instance) { i.ExpiresAt = &later }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = expire(ext, exp)
		wantErr(t, "an expiry of a lifetime extended since", err, store.ErrConflict)
		if got := mustGet(t, s, inst.ID); got.Status != fsm.Running || got.Version != ext.Version {
			t.Fatalf("a refused expiry wrote: %s v%d", got.Status, got.Version)
		}
	})
	t.Run("early", func(t *testing.T) {
		exp := c.Now().Add(time.Minute)
		inst := running(t, &exp)
		_, err := expire(inst, exp)
		wantErr(t, "an expiry before its time", err, store.ErrConflict)
		c.Advance(time.Minute)
		if _, err := expire(inst, exp); err != nil {
			t.Fatalf("the same expiry once its time came: %v", err)
		}
	})
	t.Run("no lifetime", func(t *testing.T) {
		inst := running(t, nil)
		_, err := expire(inst, c.Now())
		wantErr(t, "an expiry of an instance without a lifetime", err, store.ErrConflict)
	})
	t.Run("racing", func(t *testing.T) {
		exp := c.Now()
		inst := running(t, &exp)
		oneWins(t, "expiries of one lifetime", func() error { _, err := expire(inst, exp); return err })
		if evs := allEvents(t, s, inst.ID, 100); evs[len(evs)-1].Message != container.ReasonLifetimeReached {
			t.Fatalf("last event %+v, want the expiry's", evs[len(evs)-1])
		}
	})
}

// oneWins runs write six times at once: exactly one must be written, the
// others refused with ErrConflict.
func oneWins(t *testing.T, what string, write func() error) {
	t.Helper()
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = write() })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("racing %s: %v, want ErrConflict", what, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing %s were written, want 1", won, what)
	}
}
