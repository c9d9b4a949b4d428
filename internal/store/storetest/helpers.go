package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func mustCreate(t testing.TB, s store.Store, p store.CreateParams) container.Instance {
	t.Helper()
	inst, err := s.CreateInstance(context.Background(), p)
	if err != nil {
		t.Fatalf("CreateInstance(%s): %v", p.Instance.ID, err)
	}
	return inst
}

func mustGet(t testing.TB, s store.Store, id string) container.Instance {
	t.Helper()
	inst, err := s.GetInstance(context.Background(), id)
	if err != nil {
		t.Fatalf("GetInstance(%s): %v", id, err)
	}
	return inst
}

// move transitions inst to "to" with an event and returns the new instance.
func move(t testing.TB, s store.Store, c *Clock, inst container.Instance, to fsm.Status) container.Instance {
	t.Helper()
	out, err := s.Transition(context.Background(), store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
		Event: &container.Event{Type: "Test" + string(to), From: inst.Status, To: to, At: c.Now()},
	})
	if err != nil {
		t.Fatalf("Transition(%s, %s→%s): %v", inst.ID, inst.Status, to, err)
	}
	return out
}

func allEvents(t testing.TB, s store.Store, id string, pageSize int) []container.Event {
	t.Helper()
	var out []container.Event
	cursor := ""
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("ListEvents never ended")
		}
		page, err := s.ListEvents(context.Background(), id, cursor, pageSize)
		if err != nil {
			t.Fatalf("ListEvents(%s): %v", id, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

func allInstances(t testing.TB, s store.Store, q store.ListQuery) []container.Instance {
	t.Helper()
	var out []container.Instance
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("ListInstances never ended")
		}
		page, err := s.ListInstances(context.Background(), q)
		if err != nil {
			t.Fatalf("ListInstances(%+v): %v", q, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		q.Cursor = page.NextCursor
	}
}

func ids(items []container.Instance) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func admission(t testing.TB, s store.Store) int {
	t.Helper()
	n, err := s.AdmissionCount(context.Background())
	if err != nil {
		t.Fatalf("AdmissionCount: %v", err)
	}
	return n
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func eventSeqs(evs []container.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func checkGapless(t testing.TB, evs []container.Event) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event seqs not 1..n without gaps: %v", eventSeqs(evs))
		}
	}
}
