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

// testListDeadlines: ListDeadlines lists exactly the instances whose
// deadline (an active one's expires_at, an ended one's delete_at) falls at
// or before until, whatever else the store holds (no lifetime, kept
// ended instances, an ended one whose expires_at has passed), follows
// every write that moves a deadline (an extension, a stop into a
// retention, a start out of it, a delete), and pages without repeats.
func testListDeadlines(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	now := c.Now()
	create := func(exp *time.Time, r *container.Retention) container.Instance {
		p := NewCreate(c, "alice")
		p.Instance.ExpiresAt, p.Instance.Retention = exp, r
		return move(t, s, c, move(t, s, c, mustCreate(t, s, p), fsm.Creating), fsm.Running)
	}
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	soon := create(at(time.Minute), nil)
	later := create(at(time.Hour), nil)
	create(nil, nil) // lives until stopped
	endedPast := move(t, s, c, create(at(time.Minute), nil), fsm.Stopped)
	retained := move(t, s, c, create(nil, &container.Retention{Stopped: "2m"}), fsm.Stopped)
	kept := move(t, s, c, create(nil, &container.Retention{Failed: "1m"}), fsm.Stopped)

	due := func(until time.Time, limit int) []string {
		t.Helper()
		var out []string
		for cursor := ""; ; {
			page, err := s.ListDeadlines(ctx, until, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range page.Items {
				if in.Deadline() == nil || in.Deadline().After(until) {
					t.Fatalf("listed %s (%s, deadline %v) as due by %v", in.ID, in.Status, in.Deadline(), until)
				}
				out = append(out, in.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				slices.Sort(out)
				return out
			}
		}
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	for _, limit := range []int{1, 2, 100} {
		if got, want := due(now.Add(5*time.Minute), limit), sorted(soon.ID, retained.ID); !slices.Equal(got, want) {
			t.Fatalf("due within 5m (pages of %d): %v, want %v (not %s, %s, %s)", limit, got, want, later.ID, endedPast.ID, kept.ID)
		}
	}
	if got := due(now.Add(30*time.Second), 100); len(got) != 0 {
		t.Fatalf("due within 30s: %v, want none", got)
	}
	if got, want := due(now.Add(time.Minute), 100), []string{soon.ID}; !slices.Equal(got, want) {
		t.Fatalf("due at exactly a deadline: %v, want %v", got, want)
	}

	// The writes that move deadlines.
	if _, err := s.Transition(ctx, store.TransitionParams{ID: soon.ID, ExpectVersion: soon.Version, From: soon.Status, To: soon.Status,
		Update: func(i *container.Instance) { i.ExpiresAt = at(2 * time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	move(t, s, c, retained, fsm.Running)
	if got := due(now.Add(5*time.Minute), 100); len(got) != 0 {
		t.Fatalf("after an extension and a start: due %v, want none", got)
	}
	if got, want := due(now.Add(3*time.Hour), 100), sorted(soon.ID, later.ID); !slices.Equal(got, want) {
		t.Fatalf("due within 3h: %v, want %v", got, want)
	}
	cur := mustGet(t, s, later.ID)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: cur.ID, ExpectVersion: cur.Version,
		Event: container.Event{Type: container.EventDeleted, From: cur.Status, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	if got, want := due(now.Add(3*time.Hour), 100), []string{soon.ID}; !slices.Equal(got, want) {
		t.Fatalf("after a delete, due within 3h: %v, want %v", got, want)
	}
	if _, err := s.ListDeadlines(ctx, now, "not a cursor", 10); err == nil {
		t.Fatal("a bad cursor was accepted")
	}
}
