package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// TestPlanTransitionOwnsItsFields: whatever Update does, the store's fields
// are set once by the plan, and the event is numbered after the instance's.
func TestPlanTransitionOwnsItsFields(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cur := container.Instance{ID: "i1", Owner: "alice", Status: fsm.Creating, Version: 3, EventSeq: 7}
	w, err := store.PlanTransition(store.TransitionParams{
		ID: "i1", ExpectVersion: 3, From: fsm.Creating, To: fsm.Running,
		Update: func(in *container.Instance) {
			in.ID, in.Owner, in.Version, in.EventSeq, in.Status = "x", "mallory", 99, 99, fsm.Failed
		},
		Event: &container.Event{Type: container.EventCreating},
	}, cur, now)
	if err != nil {
		t.Fatal(err)
	}
	in := w.Instance
	if in.ID != "i1" || in.Owner != "alice" || in.Status != fsm.Running || in.Version != 4 || in.EventSeq != 8 || !in.UpdatedAt.Equal(now) {
		t.Errorf("instance = %+v", in)
	}
	if w.Event == nil || w.Event.Seq != 8 || w.Event.InstanceID != "i1" || !w.Event.At.Equal(now) {
		t.Errorf("event = %+v", w.Event)
	}
	if len(w.Parts) != 1 || w.Parts[0] != (store.Admission{Owner: "alice"}) {
		t.Errorf("leaving creating: parts = %#v, want one release", w.Parts)
	}
	if _, err := store.PlanTransition(store.TransitionParams{ID: "i1", ExpectVersion: 2, From: fsm.Creating, To: fsm.Running}, cur, now); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale version: %v, want ErrConflict", err)
	}
}

// TestPlanTransitionMarks: the item a write completes is not also marked
// dispatched.
func TestPlanTransitionMarks(t *testing.T) {
	cur := container.Instance{ID: "i1", Status: fsm.Pending, Version: 1, EventSeq: 1}
	p := store.TransitionParams{ID: "i1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating, CompleteOutboxID: "o1", DispatchOutboxID: "o1"}
	w, err := store.PlanTransition(p, cur, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Parts) != 1 || w.Parts[0] != (store.CompleteOutbox{ID: "o1"}) {
		t.Errorf("parts = %#v, want only the completion", w.Parts)
	}
	p.CompleteOutboxID = ""
	if w, _ = store.PlanTransition(p, cur, time.Now()); len(w.Parts) != 1 || w.Parts[0] != (store.DispatchOutbox{ID: "o1"}) {
		t.Errorf("parts = %#v, want the dispatch mark", w.Parts)
	}
}

// TestPlanDeleteNumbersDeliveries: a removal's deliveries report the
// instance numbered to its final event.
func TestPlanDeleteNumbersDeliveries(t *testing.T) {
	cur := container.Instance{ID: "i1", Status: fsm.Pending, Version: 2, EventSeq: 4}
	w, err := store.PlanDelete(store.DeleteParams{ID: "i1", ExpectVersion: 2,
		Deliveries: []container.OutboxItem{{ID: "d1", Op: container.OpDeliver, Delivery: &container.Delivery{WebhookID: "h"}}},
	}, cur, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if w.Event.Seq != 5 || len(w.Parts) != 2 {
		t.Fatalf("event %d, parts %#v", w.Event.Seq, w.Parts)
	}
	ob := w.Parts[1].(store.NewOutbox)
	if !ob.Delivery || ob.Item.Delivery.Seq != 5 || ob.Item.InstanceVersion != 2 {
		t.Errorf("delivery = %+v", ob)
	}
}
