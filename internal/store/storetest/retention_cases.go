package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testRetentionDeleteAt: the store owns delete_at (rule_retention.go):
// a change of status into stopped or failed sets it from the instance's
// retention, counted from the write; a start clears it; a field-only
// update keeps it; an Update that tries to move it or the retention is
// ignored; an instance without a retention, or one whose retention leaves
// the status out, never has one.
func testRetentionDeleteAt(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	p.Instance.Retention = &container.Retention{Stopped: "2h", Failed: "7d"}
	inst := mustCreate(t, s, p)
	if got := mustGet(t, s, inst.ID); got.DeleteAt != nil || got.Retention == nil || got.Retention.Stopped != "2h" {
		t.Fatalf("created: delete_at %v retention %+v, want none and the create's", got.DeleteAt, got.Retention)
	}
	running := move(t, s, c, move(t, s, c, inst, fsm.Creating), fsm.Running)
	stoppedAt := c.Now()
	stopped := move(t, s, c, running, fsm.Stopped)
	if got := mustGet(t, s, inst.ID); got.DeleteAt == nil || !got.DeleteAt.Equal(stoppedAt.Add(2*time.Hour)) {
		t.Fatalf("stopped: delete_at %v, want %v", got.DeleteAt, stoppedAt.Add(2*time.Hour))
	}
	c.Advance(time.Minute)
	sneaky := c.Now()
	kept, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: stopped.Version, From: fsm.Stopped, To: fsm.Stopped,
		Update: func(i *container.Instance) { i.DeleteAt, i.Retention, i.StatusReason = &sneaky, nil, "noted" }})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, inst.ID); got.DeleteAt == nil || !got.DeleteAt.Equal(stoppedAt.Add(2*time.Hour)) || got.Retention == nil {
		t.Fatalf("a field-only update moved delete_at to %v or retention to %+v", got.DeleteAt, got.Retention)
	}
	started := move(t, s, c, kept, fsm.StartPending)
	if got := mustGet(t, s, inst.ID); got.DeleteAt != nil {
		t.Fatalf("started again: delete_at %v, want none", got.DeleteAt)
	}
	failedAt := c.Now()
	move(t, s, c, started, fsm.Failed)
	if got := mustGet(t, s, inst.ID); got.DeleteAt == nil || !got.DeleteAt.Equal(failedAt.Add(7*24*time.Hour)) {
		t.Fatalf("failed: delete_at %v, want %v", got.DeleteAt, failedAt.Add(7*24*time.Hour))
	}

	only := NewCreate(c, "alice")
	only.Instance.Retention = &container.Retention{Failed: "1h"}
	o := mustCreate(t, s, only)
	move(t, s, c, move(t, s, c, move(t, s, c, o, fsm.Creating), fsm.Running), fsm.Stopped)
	plain := mustCreate(t, s, NewCreate(c, "alice"))
	move(t, s, c, move(t, s, c, move(t, s, c, plain, fsm.Creating), fsm.Running), fsm.Stopped)
	for _, id := range []string{o.ID, plain.ID} {
		if got := mustGet(t, s, id); got.DeleteAt != nil {
			t.Fatalf("%s stopped with delete_at %v, want none (its retention keeps stopped instances)", id, got.DeleteAt)
		}
	}
}

// testRetentionConditional: the delete of a retention that ran out
// (TransitionParams.Retention) is written only while the stored instance
// is still to be deleted at that time and that time has come by the
// store's clock; an early one, a stale one (started and stopped again
// since), one of an instance without a delete_at, one that asks for
// anything but a delete, and a duplicate are refused and write nothing; of
// racing ones exactly one is written.
func testRetentionConditional(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	ended := func(t *testing.T, r *container.Retention) container.Instance {
		p := NewCreate(c, "alice")
		p.Instance.Retention = r
		inst := mustCreate(t, s, p)
		return move(t, s, c, move(t, s, c, move(t, s, c, inst, fsm.Creating), fsm.Running), fsm.Stopped)
	}
	retire := func(inst container.Instance, to fsm.Status, at time.Time) (container.Instance, error) {
		return s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
			To: to, Retention: &at, Event: &container.Event{Type: container.EventDeleteRequested, From: inst.Status,
				To: to, At: c.Now(), Message: container.ReasonRetentionReached, Actor: container.ActorSystem}})
	}
	minute := &container.Retention{Stopped: "1m"}
	t.Run("reached", func(t *testing.T) {
		inst := ended(t, minute)
		at := *inst.DeleteAt
		_, err := retire(inst, fsm.DeletePending, at)
		wantErr(t, "a retention before its time", err, store.ErrConflict)
		c.Advance(time.Minute)
		_, err = retire(inst, fsm.Running, at)
		wantErr(t, "a retention that asks for a start", err, store.ErrInvalidParams)
		out, err := retire(inst, fsm.DeletePending, at)
		if err != nil {
			t.Fatalf("a retention at its time: %v", err)
		}
		if out.Status != fsm.DeletePending || out.DeleteAt != nil {
			t.Fatalf("status %s delete_at %v, want %s and none", out.Status, out.DeleteAt, fsm.DeletePending)
		}
		_, err = retire(inst, fsm.DeletePending, at)
		wantErr(t, "a duplicate retention", err, store.ErrConflict)
		if got := mustGet(t, s, inst.ID); got.Version != out.Version {
			t.Fatalf("a duplicate retention wrote: v%d, want v%d", got.Version, out.Version)
		}
	})
	t.Run("stale", func(t *testing.T) {
		inst := ended(t, minute)
		at := *inst.DeleteAt
		c.Advance(time.Second)
		again := move(t, s, c, move(t, s, c, inst, fsm.Running), fsm.Stopped)
		c.Advance(time.Minute)
		_, err := retire(again, fsm.DeletePending, at)
		wantErr(t, "a retention of an instance stopped again since", err, store.ErrConflict)
		if got := mustGet(t, s, inst.ID); got.Status != fsm.Stopped || got.Version != again.Version {
			t.Fatalf("a refused retention wrote: %s v%d", got.Status, got.Version)
		}
	})
	t.Run("kept", func(t *testing.T) {
		inst := ended(t, nil)
		_, err := retire(inst, fsm.DeletePending, c.Now())
		wantErr(t, "a retention of an instance kept until deleted", err, store.ErrConflict)
	})
	t.Run("racing", func(t *testing.T) {
		inst := ended(t, minute)
		at := *inst.DeleteAt
		c.Advance(time.Minute)
		oneWins(t, "retentions of one instance", func() error { _, err := retire(inst, fsm.DeletePending, at); return err })
	})
}
