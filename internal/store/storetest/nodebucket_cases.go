package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testListActiveInBucket: ListActiveInBucket lists an active instance in
// its node's bucket (store.NodeBucket) and nowhere else: an unplaced one in
// its kind's "" node's bucket, a legacy one without a runtime kind as
// Docker's, a Kubernetes one by its cluster (runtime_node_name
// "<cluster>/<node>"); placing it moves it, ending or
// deleting it removes it; the buckets together hold exactly what ListActive
// lists; pages (of 1 and of 100) never repeat or skip; a bad bucket or a
// cursor of another bucket or listing is refused.
func testListActiveInBucket(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	h1, h2 := distinctNodes(container.RuntimeDocker)
	create := func(kind string) container.Instance {
		p := NewCreate(c, "alice")
		p.Instance.Runtime, p.Instance.Spec.Runtime = kind, kind
		return mustCreate(t, s, p)
	}
	place := func(inst container.Instance, node string) container.Instance {
		t.Helper()
		inst = move(t, s, c, inst, fsm.Creating)
		out, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Creating, To: fsm.Running,
			Update: func(i *container.Instance) { i.RuntimeNodeName, i.RuntimeID = node, "c-"+i.ID },
			Event:  &container.Event{Type: "TestPlaced", From: fsm.Creating, To: fsm.Running, At: c.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	unplaced := create(container.RuntimeDocker)
	legacy := create("")
	a, b := place(create(container.RuntimeDocker), h1), place(create(container.RuntimeDocker), h1)
	moved := create(container.RuntimeDocker)
	kube := place(create(container.RuntimeKubernetes), "eks-a/node-1") // a scheduled Pod: its cluster's bucket
	ended := move(t, s, c, place(create(container.RuntimeDocker), h1), fsm.Stopped)
	gone := place(create(container.RuntimeDocker), h2)

	unplacedB := fleetshard.BucketOf(container.RuntimeDocker, "")
	h1B, h2B := fleetshard.BucketOf(container.RuntimeDocker, h1), fleetshard.BucketOf(container.RuntimeDocker, h2)
	kubeB := fleetshard.BucketOf(container.RuntimeKubernetes, "eks-a")
	want := map[int][]string{
		unplacedB: sortedIDs(unplaced, legacy, moved), h1B: sortedIDs(a, b), h2B: sortedIDs(gone), kubeB: sortedIDs(kube),
	}
	check := func(when string) {
		t.Helper()
		var union []string
		for bucket, ids := range want {
			for _, limit := range []int{1, 100} {
				if got := inBucket(t, s, bucket, limit); !slices.Equal(got, ids) {
					t.Fatalf("%s: bucket %d (pages of %d) = %v, want %v", when, bucket, limit, got, ids)
				}
			}
			union = append(union, ids...)
		}
		slices.Sort(union)
		if active := sortedIDs(allActive(t, s)...); !slices.Equal(union, active) {
			t.Fatalf("%s: the buckets hold %v, ListActive %v (ended %s)", when, union, active, ended.ID)
		}
	}
	check("before the moves")

	// Placing moves an instance from the unplaced bucket to its node's;
	// deleting one removes it.
	moved = place(moved, h2)
	cur := mustGet(t, s, gone.ID)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: cur.ID, ExpectVersion: cur.Version,
		Event: container.Event{Type: container.EventDeleted, From: cur.Status, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	want[unplacedB], want[h2B] = sortedIDs(unplaced, legacy), sortedIDs(moved)
	check("after a placement and a delete")
	move(t, s, c, a, fsm.StopPending) // still active, same bucket
	move(t, s, c, mustGet(t, s, b.ID), fsm.Failed)
	want[h1B] = sortedIDs(a)
	check("after a failure")

	for _, bad := range []int{-1, fleetshard.Buckets} {
		_, err := s.ListActiveInBucket(ctx, bad, "", 10)
		wantErr(t, fmt.Sprintf("ListActiveInBucket(%d)", bad), err, store.ErrInvalidParams)
	}
	page, err := s.ListActiveInBucket(ctx, unplacedB, "", 1)
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page of the unplaced bucket: %v, %v", page, err)
	}
	_, err = s.ListActiveInBucket(ctx, h1B, page.NextCursor, 1)
	wantErr(t, "ListActiveInBucket(another bucket's cursor)", err, store.ErrInvalidCursor)
	_, err = s.ListActive(ctx, page.NextCursor, 1)
	wantErr(t, "ListActive(a bucket's cursor)", err, store.ErrInvalidCursor)
	active, err := s.ListActive(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ListActiveInBucket(ctx, unplacedB, active.NextCursor, 1)
	wantErr(t, "ListActiveInBucket(ListActive's cursor)", err, store.ErrInvalidCursor)
}

// distinctNodes returns two node names of kind whose buckets differ from
// each other and from kind's unplaced bucket.
func distinctNodes(kind string) (string, string) {
	var out []string
	seen := map[int]bool{fleetshard.BucketOf(kind, ""): true}
	for i := 0; len(out) < 2; i++ {
		n := fmt.Sprintf("host-%d", i)
		if b := fleetshard.BucketOf(kind, n); !seen[b] {
			seen[b] = true
			out = append(out, n)
		}
	}
	return out[0], out[1]
}

// inBucket pages through one bucket and returns its ids, checking each
// page's size and that every instance listed is active and the bucket's.
func inBucket(t testing.TB, s store.Store, bucket, limit int) []string {
	t.Helper()
	var out []string
	for cursor, i := "", 0; ; i++ {
		if i > 1000 {
			t.Fatal("ListActiveInBucket never ended")
		}
		page, err := s.ListActiveInBucket(context.Background(), bucket, cursor, limit)
		if err != nil {
			t.Fatalf("ListActiveInBucket(%d): %v", bucket, err)
		}
		if len(page.Items) > limit {
			t.Fatalf("a page of %d, limit %d", len(page.Items), limit)
		}
		for _, in := range page.Items {
			if b, listed := store.NodeBucket(in); !listed || b != bucket {
				t.Fatalf("bucket %d listed %s (%s on %q: bucket %d, listed %v)", bucket, in.ID, in.Status, in.RuntimeNodeName, b, listed)
			}
			out = append(out, in.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			if !slices.IsSorted(out) {
				t.Fatalf("bucket %d not in ID order: %v", bucket, out)
			}
			return out
		}
	}
}

// allActive pages through ListActive.
func allActive(t testing.TB, s store.Store) []container.Instance {
	t.Helper()
	var out []container.Instance
	for cursor := ""; ; {
		page, err := s.ListActive(context.Background(), cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

func sortedIDs(in ...container.Instance) []string {
	out := ids(in)
	slices.Sort(out)
	return out
}
