package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testRestartConditional: a scheduled restart (restart_at, set by a
// field-only update with the exit it answers) is stored and indexed as
// the instance's deadline when it is the sooner; any change of status
// clears it (a user's stop wins over it); no Update moves the policy; and
// the start that carries it out (TransitionParams.Restart) is written only
// while the instance is running with that very restart_at and its time
// has come, once.
func testRestartConditional(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	two := 2
	scheduled := func(t *testing.T, in time.Duration) (container.Instance, time.Time) {
		p := NewCreate(c, "alice")
		p.Instance.Restart = &container.Restart{Policy: container.RestartOnFailure, MaxRestarts: &two}
		exp := c.Now().Add(time.Hour)
		p.Instance.ExpiresAt = &exp
		inst := move(t, s, c, move(t, s, c, mustCreate(t, s, p), fsm.Creating), fsm.Running)
		at := c.Now().Add(in)
		code := 3
		out, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Running, To: fsm.Running,
			Update: func(i *container.Instance) {
				i.RestartAt, i.Restarts, i.LastExit, i.Restart = &at, 1, &code, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return out, at
	}
	restart := func(inst container.Instance, at time.Time) (container.Instance, error) {
		return s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: fsm.StartPending,
			Restart: &at, Event: &container.Event{Type: container.EventStartRequested, From: inst.Status, To: fsm.StartPending,
				At: c.Now(), Actor: container.ActorSystem}})
	}
	t.Run("reached", func(t *testing.T) {
		inst, at := scheduled(t, time.Second)
		got := mustGet(t, s, inst.ID)
		if got.RestartAt == nil || !got.RestartAt.Equal(at) || got.Restarts != 1 || got.LastExit == nil || *got.LastExit != 3 ||
			got.Restart == nil || got.Restart.Limit() != 2 {
			t.Fatalf("stored %v restarts %d last_exit %v policy %+v", got.RestartAt, got.Restarts, got.LastExit, got.Restart)
		}
		page, err := s.ListDeadlines(ctx, at, "", 10)
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != inst.ID {
			t.Fatalf("due by the restart: %v %v, want the instance (its restart is sooner than its expiry)", page.Items, err)
		}
		_, err = restart(got, at)
		wantErr(t, "a restart before its time", err, store.ErrConflict)
		c.Advance(time.Second)
		out, err := restart(got, at)
		if err != nil {
			t.Fatalf("a restart at its time: %v", err)
		}
		if out.Status != fsm.StartPending || out.RestartAt != nil || out.Restarts != 1 {
			t.Fatalf("after the restart's start: %s restart_at %v restarts %d", out.Status, out.RestartAt, out.Restarts)
		}
		_, err = restart(got, at)
		wantErr(t, "a duplicate restart", err, store.ErrConflict)
	})
	t.Run("stop wins", func(t *testing.T) {
		inst, at := scheduled(t, time.Second)
		stopping := move(t, s, c, inst, fsm.StopPending)
		if stopping.RestartAt != nil {
			t.Fatalf("a stop kept restart_at %v", stopping.RestartAt)
		}
		c.Advance(time.Second)
		_, err := restart(stopping, at)
		wantErr(t, "a restart after a stop", err, fsm.ErrInvalidTransition)
		_, err = restart(inst, at)
		wantErr(t, "a restart of the instance as it was before the stop", err, store.ErrConflict)
	})
	t.Run("none", func(t *testing.T) {
		inst := move(t, s, c, move(t, s, c, mustCreate(t, s, NewCreate(c, "alice")), fsm.Creating), fsm.Running)
		_, err := restart(inst, c.Now())
		wantErr(t, "a restart never scheduled", err, store.ErrConflict)
	})
}
