package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testTransitionCarriesDispatch: a transition with DispatchOutboxID (a
// worker's claim) marks a pending item dispatched in the same write, so
// that it leaves ListUndispatched; a dispatched item keeps its time, a
// finished one stays finished, and a missing one or one the same write
// completes does not fail the transition.
func testTransitionCarriesDispatch(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	type row struct {
		name     string
		prepare  func(t *testing.T, id string) // the item's state before the claim
		mark     func(id string) string        // DispatchOutboxID from the item's id
		complete bool                          // the claim also completes the item
		want     container.OutboxState
		wantAt   func(claimedAt time.Time) time.Time // the DispatchedAt expected; nil: none
	}
	earlier := c.Now()
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rows := []row{
		{name: "pending", prepare: func(*testing.T, string) {}, mark: func(id string) string { return id },
			want: container.OutboxDispatched, wantAt: func(at time.Time) time.Time { return at }},
		{name: "dispatched", prepare: func(t *testing.T, id string) { must(t, s.MarkDispatched(ctx, id, earlier)) },
			mark: func(id string) string { return id }, want: container.OutboxDispatched,
			wantAt: func(time.Time) time.Time { return earlier }},
		{name: "done", prepare: func(t *testing.T, id string) { must(t, s.MarkDone(ctx, id, earlier)) },
			mark: func(id string) string { return id }, want: container.OutboxDone},
		{name: "failed", prepare: func(t *testing.T, id string) { must(t, s.MarkFailed(ctx, id, 3, "gave up", earlier)) },
			mark: func(id string) string { return id }, want: container.OutboxFailed},
		{name: "missing", prepare: func(*testing.T, string) {}, mark: func(string) string { return "no-such-item" },
			want: container.OutboxPending},
		{name: "completed by the same write", prepare: func(*testing.T, string) {}, mark: func(id string) string { return id },
			complete: true, want: container.OutboxDone},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			p := NewCreate(c, "alice")
			inst := mustCreate(t, s, p)
			id := p.Outbox.ID
			r.prepare(t, id)
			c.Advance(time.Second)
			claimedAt := c.Now()
			tp := store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Pending, To: fsm.Creating,
				Event:            &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating, At: claimedAt},
				DispatchOutboxID: r.mark(id)}
			if r.complete {
				tp.CompleteOutboxID = id
			}
			out, err := s.Transition(ctx, tp)
			if err != nil || out.Status != fsm.Creating || out.Version != inst.Version+1 {
				t.Fatalf("claim carrying the dispatch mark of a %s item = %+v, %v; want it creating at version %d",
					r.name, out, err, inst.Version+1)
			}
			ob, err := s.GetOutbox(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if ob.State != r.want {
				t.Errorf("item after the claim: %s; want %s", ob.State, r.want)
			}
			if r.wantAt != nil {
				if want := r.wantAt(claimedAt); ob.DispatchedAt == nil || !ob.DispatchedAt.Equal(want) {
					t.Errorf("DispatchedAt = %v; want %v", ob.DispatchedAt, want)
				}
			}
			pending, err := s.ListUndispatched(ctx, c.Now().Add(time.Minute), 100)
			if err != nil {
				t.Fatal(err)
			}
			listed := slices.ContainsFunc(pending, func(it container.OutboxItem) bool { return it.ID == id })
			if listed != (r.want == container.OutboxPending) {
				t.Errorf("ListUndispatched lists the item: %v; want %v (state %s)", listed, !listed, r.want)
			}
		})
	}
}
