package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func TestCreateRoundTripsHiddenFieldsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "berth.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := newInstance("alice")
	created := mustCreate(t, s, in)
	if created.EventSeq != 1 || created.Version != 1 {
		t.Fatalf("created version %d eventseq %d, want 1 and 1", created.Version, created.EventSeq)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetInstance(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, in.Spec) {
		t.Errorf("spec after reopen = %+v, want %+v", got.Spec, in.Spec)
	}
	if got.EventSeq != 1 {
		t.Errorf("EventSeq after reopen = %d, want 1", got.EventSeq)
	}
	if !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, created.CreatedAt)
	}
}

func TestCreateRejectionsWriteNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)

	first := newInstance("alice")
	p := createParams(first)
	p.MaxPending = 1
	p.Idempotency = &store.IdempotencyRecord{Owner: "alice", Key: "k1", Response: []byte("first")}
	if _, err := s.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		params func() store.CreateParams
		want   error
	}{
		"queue full": {func() store.CreateParams {
			p := createParams(newInstance("alice"))
			p.MaxPending = 1
			return p
		}, store.ErrQueueFull},
		"id taken": {func() store.CreateParams {
			in := newInstance("bob")
			in.ID = first.ID
			return createParams(in)
		}, store.ErrAlreadyExists},
		"idempotency key used": {func() store.CreateParams {
			p := createParams(newInstance("alice"))
			p.Idempotency = &store.IdempotencyRecord{Owner: "alice", Key: "k1"}
			return p
		}, store.ErrDuplicateRequest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.params()
			_, err := s.CreateInstance(ctx, p)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if _, err := s.GetOutbox(ctx, p.Outbox.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("outbox item written by a rejected create: %v", err)
			}
			if n, _ := s.AdmissionCount(ctx); n != 1 {
				t.Errorf("admission = %d, want 1", n)
			}
		})
	}
}

func TestTransitionChecks(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	in := mustCreate(t, s, newInstance("alice"))

	_, err := s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Running})
	if !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("pending→running: %v, want ErrInvalidTransition", err)
	}
	_, err = s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: 2, From: fsm.Pending, To: fsm.Creating})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale version: %v, want ErrConflict", err)
	}
	_, err = s.Transition(ctx, store.TransitionParams{ID: in.ID, ExpectVersion: 1, From: fsm.Running, To: fsm.Stopped})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("wrong from: %v, want ErrConflict", err)
	}
	_, err = s.Transition(ctx, store.TransitionParams{ID: "nope", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing instance: %v, want ErrNotFound", err)
	}
	if got, _ := s.GetInstance(ctx, in.ID); got.Version != 1 || got.Status != fsm.Pending {
		t.Fatalf("rejected transitions changed the instance: %+v", got)
	}
}

func TestTransitionWritesEverythingTogether(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	in := mustCreate(t, s, newInstance("alice"))
	page, _ := s.ListUndispatched(ctx, clock.Now().Add(time.Hour), 10)
	if len(page) != 1 {
		t.Fatalf("undispatched = %d items, want 1", len(page))
	}
	createItem := page[0]
	clock.Advance(time.Minute)

	next, err := s.Transition(ctx, store.TransitionParams{
		ID: in.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
		Update: func(i *container.Instance) {
			i.RuntimeID = "c-1"
			i.Version = 99 // must be ignored
			i.Owner = "mallory"
		},
		Event:            &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating},
		Outbox:           &container.OutboxItem{ID: container.NewID(), Op: container.OpStart},
		CompleteOutboxID: createItem.ID,
	})
	if err != nil {
		t.Fatal(err)
	}
	if next.Version != 2 || next.Owner != "alice" || next.RuntimeID != "c-1" || next.EventSeq != 2 {
		t.Fatalf("after transition: version %d owner %q runtime id %q eventseq %d",
			next.Version, next.Owner, next.RuntimeID, next.EventSeq)
	}
	if !next.UpdatedAt.Equal(clock.Now()) {
		t.Errorf("UpdatedAt = %v, want the clock's %v", next.UpdatedAt, clock.Now())
	}
	done, err := s.GetOutbox(ctx, createItem.ID)
	if err != nil || done.State != container.OutboxDone {
		t.Errorf("completed outbox = %+v, %v", done, err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 1 {
		t.Errorf("admission after pending→creating = %d, want 1 (creating holds the slot)", n)
	}
	// Field-only update: no FSM check, version bumps, slot kept.
	same, err := s.Transition(ctx, store.TransitionParams{
		ID: in.ID, ExpectVersion: 2, From: fsm.Creating, To: fsm.Creating,
		Update: func(i *container.Instance) { i.RuntimeNodeName = "node-1" },
	})
	if err != nil || same.Version != 3 || same.RuntimeNodeName != "node-1" {
		t.Fatalf("field-only update: %+v, %v", same, err)
	}
	running := mustTransition(t, s, same, fsm.Running)
	if n, _ := s.AdmissionCount(ctx); n != 0 {
		t.Errorf("admission after creating→running = %d, want 0", n)
	}
	active, _ := s.ListActive(ctx, "", 0)
	if len(active.Items) != 1 || active.Items[0].Status != fsm.Running {
		t.Errorf("ListActive = %+v", active.Items)
	}
	evs, err := s.ListEvents(ctx, in.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range evs.Items {
		seqs = append(seqs, e.Seq)
		if e.InstanceID != in.ID {
			t.Errorf("event %d has instance id %q", e.Seq, e.InstanceID)
		}
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3}) || running.EventSeq != 3 {
		t.Errorf("event seqs = %v (instance EventSeq %d), want [1 2 3]", seqs, running.EventSeq)
	}
}

func TestAppendEventKeepsVersion(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	in := mustCreate(t, s, newInstance("alice"))
	ev, err := s.AppendEvent(ctx, container.Event{InstanceID: in.ID, Type: container.EventTransitionReject})
	if err != nil || ev.Seq != 2 {
		t.Fatalf("append = %+v, %v", ev, err)
	}
	got, _ := s.GetInstance(ctx, in.ID)
	if got.Version != 1 || got.EventSeq != 2 {
		t.Errorf("after append: version %d eventseq %d, want 1 and 2", got.Version, got.EventSeq)
	}
	if _, err := s.AppendEvent(ctx, container.Event{InstanceID: "gone"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append to missing instance: %v", err)
	}
}

func TestDeleteKeepsEventsForRetention(t *testing.T) {
	ctx := context.Background()
	s, clock := openTest(t)
	in := mustCreate(t, s, newInstance("alice"))

	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: in.ID, ExpectVersion: 7}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale delete: %v", err)
	}
	err := s.DeleteInstance(ctx, store.DeleteParams{ID: in.ID, ExpectVersion: 1,
		Event: container.Event{Type: container.EventDeleted}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: in.ID, ExpectVersion: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetInstance(ctx, in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 0 {
		t.Errorf("admission after deleting a pending instance = %d, want 0", n)
	}
	if list, _ := s.ListInstances(ctx, store.ListQuery{Owner: "alice"}); len(list.Items) != 0 {
		t.Errorf("deleted instance still listed")
	}
	if _, err := s.CreateInstance(ctx, createParams(in)); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("re-create of a deleted id with retained events: %v, want ErrAlreadyExists", err)
	}

	clock.Advance(store.EventRetention - time.Second)
	evs, err := s.ListEvents(ctx, in.ID, "", 0)
	if err != nil || len(evs.Items) != 2 || evs.Items[1].Type != container.EventDeleted {
		t.Fatalf("events just before retention ends = %+v, %v", evs.Items, err)
	}
	if st, err := s.Purge(ctx, clock.Now()); err != nil || st.Events != 0 {
		t.Fatalf("early purge removed %+v, %v", st, err)
	}
	clock.Advance(time.Second)
	if _, err := s.ListEvents(ctx, in.ID, "", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("events after retention: %v, want ErrNotFound", err)
	}
	st, err := s.Purge(ctx, clock.Now())
	if err != nil || st.Events != 2 || st.DeletedInstances != 1 {
		t.Fatalf("purge = %+v, %v; want 2 events of 1 instance", st, err)
	}
	if _, err := s.CreateInstance(ctx, createParams(in)); err != nil {
		t.Errorf("create after the old history was purged: %v", err)
	}
}
