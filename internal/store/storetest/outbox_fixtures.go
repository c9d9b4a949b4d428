package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// The fixtures below commit outbox items the way the manager does, for the
// packages that read the outbox (outbox's dispatcher and watcher,
// lambdastream's stream adapter): one copy, so that what they test against
// cannot drift apart.

// CreateAt is a valid create of an instance of "alice" committed at "at":
// the instance, its outbox item and its event all carry that time, which
// dispatch latency and the outbox sweep measure from.
func CreateAt(at time.Time) store.CreateParams {
	p := NewCreate(NewClock(), "alice")
	p.Instance.CreatedAt, p.Instance.UpdatedAt = at, at
	p.Outbox.CreatedAt, p.Outbox.UpdatedAt = at, at
	p.Event.At = at
	return p
}

// CommitCreate commits CreateAt(at) to st and returns its outbox item as
// stored.
func CommitCreate(t testing.TB, st store.Store, at time.Time) container.OutboxItem {
	t.Helper()
	p := CreateAt(at)
	if _, err := st.CreateInstance(context.Background(), p); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	return GetOutbox(t, st, p.Outbox.ID)
}

// GetOutbox returns the outbox item id as stored, failing the test when it
// cannot be read.
func GetOutbox(t testing.TB, st store.OutboxStore, id string) container.OutboxItem {
	t.Helper()
	it, err := st.GetOutbox(context.Background(), id)
	if err != nil {
		t.Fatalf("GetOutbox(%s): %v", id, err)
	}
	return it
}

// CommitRequest commits a create, moves the instance to running and then
// asks for op (start, stop or delete), returning that request's outbox item
// as stored.
func CommitRequest(t testing.TB, st store.Store, op container.Op) container.OutboxItem {
	t.Helper()
	ctx := context.Background()
	inst, err := st.CreateInstance(ctx, CreateAt(time.Now()))
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			t.Fatalf("Transition to %s: %v", to, err)
		}
	}
	to := map[container.Op]fsm.Status{container.OpStart: fsm.StartPending, container.OpStop: fsm.StopPending, container.OpDelete: fsm.DeletePending}[op]
	ob := container.OutboxItem{ID: container.NewID(), InstanceID: inst.ID, Op: op, InstanceVersion: inst.Version + 1, RequestID: "req-" + string(op)}
	if _, err := st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to, Outbox: &ob}); err != nil {
		t.Fatalf("Transition to %s: %v", to, err)
	}
	return GetOutbox(t, st, ob.ID)
}
