package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func TestListInstancesPagesWithoutRepeatsOrSkipsWhileInserting(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	want := map[string]bool{}
	for range 23 {
		want[mustCreate(t, s, newInstance("alice")).ID] = true
		mustCreate(t, s, newInstance("bob"))
	}
	for _, owner := range []string{"alice", ""} {
		seen := map[string]bool{}
		cursor, pages, prev := "", 0, ""
		for {
			page, err := s.ListInstances(ctx, store.ListQuery{Owner: owner, Limit: 5, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, in := range page.Items {
				if seen[in.ID] {
					t.Fatalf("owner %q: %s repeated", owner, in.ID)
				}
				if in.ID <= prev {
					t.Fatalf("owner %q: %s after %s, want id order", owner, in.ID, prev)
				}
				prev = in.ID
				seen[in.ID] = true
			}
			// Inserts during the walk must not disturb it.
			mustCreate(t, s, newInstance("alice"))
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		for id := range want {
			if !seen[id] {
				t.Errorf("owner %q: %s skipped", owner, id)
			}
		}
		if owner == "alice" && pages < 5 {
			t.Errorf("%d pages of 5 for >= 23 items", pages)
		}
	}
}

func TestListInstancesFiltersAndLastPage(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	a := newInstance("alice")
	a.Group, a.Labels = "g1", map[string]string{"team": "a", "env": "prod"}
	a = mustCreate(t, s, a)
	b := mustCreate(t, s, newInstance("alice"))
	b = mustTransition(t, s, b, fsm.Failed)
	mustCreate(t, s, newInstance("bob"))

	check := func(name string, q store.ListQuery, want ...string) {
		t.Helper()
		page, err := s.ListInstances(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, in := range page.Items {
			got = append(got, in.ID)
		}
		if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) || page.NextCursor != "" {
			t.Errorf("%s: got %v (next %q), want %v and no cursor", name, got, page.NextCursor, want)
		}
	}
	check("status", store.ListQuery{Owner: "alice", Statuses: []fsm.Status{fsm.Failed}}, b.ID)
	check("group", store.ListQuery{Owner: "alice", Group: "g1"}, a.ID)
	check("labels", store.ListQuery{Owner: "alice", Labels: map[string]string{"env": "prod", "team": "a"}}, a.ID)
	check("labels partial mismatch", store.ListQuery{Owner: "alice", Labels: map[string]string{"env": "dev"}})
	check("template", store.ListQuery{Owner: "alice", Template: "other"})
	check("owner prefix", store.ListQuery{Owner: "ali"})
	// An exact fit gets no cursor: the walk looks one match ahead.
	check("exact page", store.ListQuery{Owner: "alice", Limit: 2}, a.ID, b.ID)

	if _, err := s.ListInstances(ctx, store.ListQuery{Cursor: "%%%"}); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestListActiveSkipsTerminal(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	active := map[string]bool{}
	for i := range 30 {
		in := mustCreate(t, s, newInstance("alice"))
		switch i % 3 {
		case 0:
			in = mustTransition(t, s, in, fsm.Failed)
		case 1:
			in = mustTransition(t, s, in, fsm.Creating)
			in = mustTransition(t, s, in, fsm.Stopped)
			in = mustTransition(t, s, in, fsm.StartPending)
			active[in.ID] = true
		default:
			active[in.ID] = true
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for {
		page, err := s.ListActive(ctx, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page.Items {
			if in.Status.Terminal() || seen[in.ID] {
				t.Fatalf("ListActive returned %s (%s) again or terminal", in.ID, in.Status)
			}
			seen[in.ID] = true
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(seen) != len(active) {
		t.Errorf("ListActive saw %d, want %d", len(seen), len(active))
	}
}

func TestListEventsPages(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	in := mustCreate(t, s, newInstance("alice"))
	for range 250 {
		if _, err := s.AppendEvent(ctx, container.Event{InstanceID: in.ID, Type: "X"}); err != nil {
			t.Fatal(err)
		}
	}
	next, cursor := int64(1), ""
	for {
		page, err := s.ListEvents(ctx, in.ID, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 100 {
			t.Fatalf("page of %d, want at most 100", len(page.Items))
		}
		for _, e := range page.Items {
			if e.Seq != next {
				t.Fatalf("seq %d, want %d", e.Seq, next)
			}
			next++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if next != 252 {
		t.Errorf("read events up to %d, want 251", next-1)
	}
	if _, err := s.ListEvents(ctx, "nope", "", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("events of unknown instance: %v", err)
	}
}

// A listing by status walks the status indexes (the owner's, for an owner),
// merged in id order, and reads no instance in another status: here every
// record outside the statuses asked for is unreadable, which a walk over the
// owner's or the store's instances would trip on.
func TestListInstancesByStatusReadsOnlyThoseStatuses(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	want := map[string][]string{} // owner ("" every owner) → ids running or stopped, in id order
	var others []string
	for i := range 30 {
		owner := []string{"alice", "bob"}[i%2]
		in := mustCreate(t, s, newInstance(owner))
		switch i % 3 {
		case 0:
			in = mustTransition(t, s, mustTransition(t, s, in, fsm.Creating), fsm.Running)
		case 1:
			in = mustTransition(t, s, mustTransition(t, s, in, fsm.Creating), fsm.Stopped)
		default:
			others = append(others, in.ID) // stays pending
			continue
		}
		want[owner] = append(want[owner], in.ID)
		want[""] = append(want[""], in.ID)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for _, id := range others {
			if err := tx.Bucket(bucketInstances).Put([]byte(id), []byte("not json")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"alice", "bob", ""} {
		var got []string
		cursor := ""
		for {
			page, err := s.ListInstances(ctx, store.ListQuery{Owner: owner, Limit: 4, Cursor: cursor,
				Statuses: []fsm.Status{fsm.Stopped, fsm.Running, fsm.Stopped}})
			if err != nil {
				t.Fatalf("owner %q: %v", owner, err)
			}
			for _, in := range page.Items {
				if owner != "" && in.Owner != owner {
					t.Fatalf("owner %q got %s of %s", owner, in.ID, in.Owner)
				}
				got = append(got, in.ID)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if !slices.Equal(got, want[owner]) {
			t.Errorf("owner %q listed\n%v\nwant\n%v", owner, got, want[owner])
		}
	}
}

// A file written before idx_owner_status existed gets the index built at
// Open, so an owner's listing by status still finds every instance.
func TestOpenIndexesOwnerStatusOfAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := mustTransition(t, s, mustCreate(t, s, newInstance("alice")), fsm.Creating)
	mustCreate(t, s, newInstance("alice"))
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketOwnerStatus) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.ListInstances(ctx, store.ListQuery{Owner: "alice", Statuses: []fsm.Status{fsm.Creating}})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != in.ID {
		t.Fatalf("alice's creating instances after reopening: %+v, %v; want %s", page.Items, err, in.ID)
	}
}
