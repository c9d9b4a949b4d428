package storetest

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testCreateParamsChecked: every backend refuses the same malformed creates
// with ErrInvalidParams, writing nothing, and fills in the same defaults
// (version 1, the outbox item's instance id and version).
func testCreateParamsChecked(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	refused := map[string]func(p *store.CreateParams){
		"version 2":                  func(p *store.CreateParams) { p.Instance.Version = 2 },
		"born creating":              func(p *store.CreateParams) { p.Instance.Status = fsm.Creating },
		"no id":                      func(p *store.CreateParams) { p.Instance.ID = "" },
		"outbox item without id":     func(p *store.CreateParams) { p.Outbox.ID = "" },
		"outbox for another id":      func(p *store.CreateParams) { p.Outbox.InstanceID = "someone-else" },
		"outbox for another version": func(p *store.CreateParams) { p.Outbox.InstanceVersion = 2 },
	}
	for name, spoil := range refused {
		p := NewCreate(c, "alice")
		spoil(&p)
		_, err := s.CreateInstance(ctx, p)
		wantErr(t, name, err, store.ErrInvalidParams)
		if p.Instance.ID != "" {
			_, err := s.GetInstance(ctx, p.Instance.ID)
			wantErr(t, name+": instance written", err, store.ErrNotFound)
		}
		if p.Outbox.ID != "" {
			_, err := s.GetOutbox(ctx, p.Outbox.ID)
			wantErr(t, name+": outbox item written", err, store.ErrNotFound)
		}
	}
	if n, err := s.AdmissionCount(ctx); err != nil || n != 0 {
		t.Fatalf("admission %d, %v after refused creates", n, err)
	}

	p := NewCreate(c, "alice")
	p.Instance.Version, p.Instance.Status = 0, ""
	p.Outbox.InstanceID, p.Outbox.InstanceVersion = "", 0
	inst := mustCreate(t, s, p)
	if inst.Version != 1 || inst.Status != fsm.Pending || inst.EventSeq != 1 {
		t.Fatalf("created %+v: want pending at version 1, event_seq 1", inst)
	}
	ob, err := s.GetOutbox(ctx, p.Outbox.ID)
	if err != nil || ob.InstanceID != inst.ID || ob.InstanceVersion != 1 {
		t.Fatalf("outbox item %+v, %v: want it filled in for %s@1", ob, err, inst.ID)
	}
}

// testTransitionOutboxChecked: a transition's outbox item is for the
// instance as the write leaves it; one for another instance or version is
// refused with ErrInvalidParams and nothing is written.
func testTransitionOutboxChecked(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	for name, ob := range map[string]container.OutboxItem{
		"another instance": {ID: newID(), InstanceID: "someone-else", Op: container.OpDelete},
		"the old version":  {ID: newID(), InstanceVersion: inst.Version, Op: container.OpDelete},
	} {
		_, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
			To: fsm.DeletePending, Outbox: &ob})
		wantErr(t, name, err, store.ErrInvalidParams)
		if got, _ := s.GetInstance(ctx, inst.ID); got.Version != inst.Version || got.Status != inst.Status {
			t.Fatalf("%s: instance written: %+v", name, got)
		}
		_, err = s.GetOutbox(ctx, ob.ID)
		wantErr(t, name+": outbox item written", err, store.ErrNotFound)
	}
	ob := container.OutboxItem{ID: newID(), Op: container.OpDelete}
	next, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status,
		To: fsm.DeletePending, Outbox: &ob})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetOutbox(ctx, ob.ID); err != nil || got.InstanceID != inst.ID || got.InstanceVersion != next.Version ||
		got.State != container.OutboxPending {
		t.Fatalf("outbox item %+v, %v: want it filled in for %s@%d", got, err, inst.ID, next.Version)
	}
}
