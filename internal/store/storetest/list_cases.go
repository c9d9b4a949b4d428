package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func testListFilters(t *testing.T, s store.Store, c *Clock) {
	var alice []string
	for i := 0; i < 5; i++ {
		p := NewCreate(c, "alice")
		if i%2 == 0 {
			p.Instance.Group = "g1"
			p.Instance.Labels = map[string]string{"team": "a", "env": "dev"}
		} else {
			p.Instance.Template = "other"
		}
		alice = append(alice, mustCreate(t, s, p).ID)
	}
	bob := mustCreate(t, s, NewCreate(c, "bob"))
	running := move(t, s, c, move(t, s, c, mustGet(t, s, alice[0]), fsm.Creating), fsm.Running)

	cases := []struct {
		name string
		q    store.ListQuery
		want []string
	}{
		{"owner", store.ListQuery{Owner: "alice"}, alice},
		{"other owner", store.ListQuery{Owner: "bob"}, []string{bob.ID}},
		{"nobody", store.ListQuery{Owner: "carol"}, nil},
		{"status", store.ListQuery{Owner: "alice", Statuses: []fsm.Status{fsm.Running}}, []string{running.ID}},
		{"statuses", store.ListQuery{Owner: "alice", Statuses: []fsm.Status{fsm.Running, fsm.Pending}}, alice},
		{"template", store.ListQuery{Owner: "alice", Template: "other"}, []string{alice[1], alice[3]}},
		{"group", store.ListQuery{Owner: "alice", Group: "g1"}, []string{alice[0], alice[2], alice[4]}},
		{"label", store.ListQuery{Owner: "alice", Labels: map[string]string{"env": "dev"}}, []string{alice[0], alice[2], alice[4]}},
		{"labels all match", store.ListQuery{Owner: "alice", Labels: map[string]string{"env": "dev", "team": "b"}}, nil},
		{"group+status", store.ListQuery{Owner: "alice", Group: "g1", Statuses: []fsm.Status{fsm.Pending}}, []string{alice[2], alice[4]}},
		{"small pages", store.ListQuery{Owner: "alice", Limit: 2}, alice},
		{"filtered small pages", store.ListQuery{Owner: "alice", Group: "g1", Limit: 1}, []string{alice[0], alice[2], alice[4]}},
	}
	for _, tc := range cases {
		got := ids(allInstances(t, s, tc.q))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// Every owner (admin view): order unspecified, each exactly once.
	got := ids(allInstances(t, s, store.ListQuery{Limit: 2}))
	want := append(slices.Clone(alice), bob.ID)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("all owners: got %v, want %v", got, want)
	}
	// Pages respect the limit.
	page, err := s.ListInstances(context.Background(), store.ListQuery{Owner: "alice", Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("first page of 2: %d items, cursor %q, %v", len(page.Items), page.NextCursor, err)
	}
}

func testListPaginationWithInserts(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	var original []string
	for i := 0; i < 23; i++ {
		original = append(original, mustCreate(t, s, NewCreate(c, "alice")).ID)
	}
	seen := map[string]int{}
	q := store.ListQuery{Owner: "alice", Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination never ended")
		}
		page, err := s.ListInstances(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			seen[it.ID]++
		}
		// Inserts between pages: new instances sort after every existing one.
		mustCreate(t, s, NewCreate(c, "alice"))
		if pages == 2 {
			mustCreate(t, s, NewCreate(c, "bob"))
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	for _, id := range original {
		if seen[id] != 1 {
			t.Fatalf("instance %s seen %d times during pagination", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("instance %s repeated %d times", id, n)
		}
	}
}

func testListActive(t *testing.T, s store.Store, c *Clock) {
	a := mustCreate(t, s, NewCreate(c, "alice"))
	b := mustCreate(t, s, NewCreate(c, "bob"))
	d := mustCreate(t, s, NewCreate(c, "alice"))
	move(t, s, c, a, fsm.Failed)
	move(t, s, c, move(t, s, c, d, fsm.Creating), fsm.Stopped)
	e := move(t, s, c, mustCreate(t, s, NewCreate(c, "alice")), fsm.Creating)
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("ListActive never ended")
		}
		page, err := s.ListActive(context.Background(), cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if it.Status.Terminal() {
				t.Fatalf("ListActive returned terminal %s", it.Status)
			}
			got = append(got, it.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	slices.Sort(got)
	want := []string{b.ID, e.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ListActive = %v, want %v", got, want)
	}
}

func testListEventsPaginated(t *testing.T, s store.Store, c *Clock) {
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	for i := 0; i < 11; i++ {
		if _, err := s.AppendEvent(context.Background(), container.Event{InstanceID: inst.ID, Type: "Note", At: c.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	evs := allEvents(t, s, inst.ID, 5)
	if len(evs) != 12 {
		t.Fatalf("%d events, want 12", len(evs))
	}
	checkGapless(t, evs)
	page, err := s.ListEvents(context.Background(), inst.ID, "", 5)
	if err != nil || len(page.Items) != 5 || page.NextCursor == "" {
		t.Fatalf("first page: %d items, cursor %q, %v", len(page.Items), page.NextCursor, err)
	}
}
