package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// manyInstances is enough instances that a backend which splits its
// listings (dynamostore's index shards) holds some in most of its parts.
const manyInstances = 48

// testListManyInstances lists more instances than a page holds, over
// several statuses, in small pages: a listing that lost a part of its index
// or a cursor that skipped from one part to the next would miss some; one
// that resumed a part from its start would repeat some.
func testListManyInstances(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	var active, queued, outbox []string
	for i := range manyInstances {
		p := NewCreate(c, []string{"alice", "bob"}[i%2])
		inst := mustCreate(t, s, p)
		outbox = append(outbox, p.Outbox.ID)
		switch i % 6 {
		case 0, 1:
			queued = append(queued, inst.ID)
		case 2, 3:
			move(t, s, c, inst, fsm.Creating)
			queued = append(queued, inst.ID)
		case 4:
			move(t, s, c, move(t, s, c, inst, fsm.Creating), fsm.Running)
		case 5:
			move(t, s, c, inst, fsm.Failed)
			c.Advance(time.Millisecond)
			continue
		}
		active = append(active, inst.ID)
		c.Advance(time.Millisecond)
	}

	var got []string
	for cursor, pages := "", 0; ; pages++ {
		if pages > manyInstances {
			t.Fatal("ListActive never ended")
		}
		page, err := s.ListActive(ctx, cursor, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 5 {
			t.Fatalf("ListActive page of %d, limit 5", len(page.Items))
		}
		got = append(got, ids(page.Items)...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	sameSet(t, "ListActive in pages of 5", got, active)

	byStatus := allInstances(t, s, store.ListQuery{Statuses: []fsm.Status{fsm.Creating, fsm.Pending}, Limit: 3})
	for _, in := range byStatus {
		if in.Status != fsm.Creating && in.Status != fsm.Pending {
			t.Fatalf("ListInstances(creating, pending) returned %s in %s", in.ID, in.Status)
		}
	}
	sameSet(t, "ListInstances by status in pages of 3", ids(byStatus), queued)

	// Oldest first across every part, with a limit below the count.
	for _, limit := range []int{7, manyInstances + 1} {
		items, err := s.ListUndispatched(ctx, c.Now(), limit)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, it := range items {
			gotIDs = append(gotIDs, it.ID)
		}
		if want := outbox[:min(limit, len(outbox))]; !slices.Equal(gotIDs, want) {
			t.Fatalf("ListUndispatched limit %d = %v, want %v", limit, gotIDs, want)
		}
	}

	if _, after, err := s.RepairAdmission(ctx); err != nil || after != len(queued) {
		t.Fatalf("RepairAdmission = %d, %v; want %d", after, err, len(queued))
	}
}

// sameSet fails unless got holds each of want exactly once and nothing else.
func sameSet(t testing.TB, what string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("%s: %s listed %d times, want once", what, id, seen[id])
		}
		delete(seen, id)
	}
	for id, n := range seen {
		t.Errorf("%s: %s listed %d times, want never", what, id, n)
	}
}
