package manager_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// racing wraps a real store: before each of its next `races` conditional
// writes, another writer moves the instance first (a field-only
// transition), so the write loses the race with a real ErrConflict.
type racing struct {
	store.Store
	races atomic.Int32
}

func (r *racing) interfere(ctx context.Context, id string) error {
	if r.races.Add(-1) < 0 {
		return nil
	}
	inst, err := r.Store.GetInstance(ctx, id)
	if err != nil {
		return err
	}
	_, err = r.Store.Transition(ctx, store.TransitionParams{ID: id, ExpectVersion: inst.Version, From: inst.Status, To: inst.Status,
		Update: func(i *container.Instance) { i.StatusReason = "moved by another writer" }})
	return err
}

func (r *racing) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	if err := r.interfere(ctx, p.ID); err != nil {
		return container.Instance{}, err
	}
	return r.Store.Transition(ctx, p)
}

func (r *racing) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	if err := r.interfere(ctx, p.ID); err != nil {
		return err
	}
	return r.Store.DeleteInstance(ctx, p)
}

// racingManager is a manager over a racing store holding template "t".
func racingManager(t *testing.T, b teststores.Backend) (*racing, *manager.Manager) {
	t.Helper()
	rs := &racing{Store: b.Open(t, time.Now)}
	m := manager.New(manager.Options{Store: rs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, _, err := m.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true}, container.Template{Name: "t", Runtime: "docker", Image: "x"}); err != nil {
		t.Fatal(err)
	}
	return rs, m
}

// TestWritesRetryLostRaces: Advance and Remove decide again on fresh state
// after each lost race, up to MaxConflictRetries times, then give up with
// store.ErrConflict; on both stores.
func TestWritesRetryLostRaces(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		rs, m := racingManager(t, b)
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		id := res.Instance.ID
		var decisions int
		toCreating := func(inst container.Instance) (*store.TransitionParams, error) {
			decisions++
			if inst.Status != fsm.Pending {
				return nil, nil
			}
			return &store.TransitionParams{To: fsm.Creating}, nil
		}

		rs.races.Store(manager.MaxConflictRetries + 1)
		if _, err := m.Advance(ctx, id, toCreating); !errors.Is(err, store.ErrConflict) || decisions != manager.MaxConflictRetries+1 {
			t.Fatalf("always losing: %v after %d decisions, want ErrConflict after %d", err, decisions, manager.MaxConflictRetries+1)
		}

		decisions = 0
		rs.races.Store(manager.MaxConflictRetries)
		inst, err := m.Advance(ctx, id, toCreating)
		if err != nil || inst.Status != fsm.Creating || decisions != manager.MaxConflictRetries+1 {
			t.Fatalf("winning the last try: %s, %v after %d decisions", inst.Status, err, decisions)
		}

		if _, err := m.Advance(ctx, id, func(container.Instance) (*store.TransitionParams, error) {
			return &store.TransitionParams{To: fsm.DeletePending}, nil
		}); err != nil {
			t.Fatal(err)
		}
		rs.races.Store(3)
		removals := 0
		if err := m.Remove(ctx, id, func(container.Instance) (*store.DeleteParams, error) {
			removals++
			return &store.DeleteParams{Event: container.Event{Type: container.EventDeleted, At: time.Now().UTC(), Actor: container.ActorSystem}}, nil
		}); err != nil || removals != 4 {
			t.Fatalf("remove after 3 lost races: %v after %d decisions", err, removals)
		}
		if _, err := m.Advance(ctx, id, toCreating); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("advance of a removed instance: %v, want ErrNotFound", err)
		}
	})
}
