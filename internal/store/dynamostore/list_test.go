package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func getEventInput(s *Store, id string, seq int64) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(s.events), Key: eventKey(id, seq), ConsistentRead: aws.Bool(true)}
}

// walk pages through a listing, creating an instance between pages.
func walk(t *testing.T, s *Store, q store.ListQuery, between func(page int)) []string {
	t.Helper()
	var ids []string
	for page := 0; ; page++ {
		p, err := s.ListInstances(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > max(q.Limit, 0) && q.Limit > 0 {
			t.Fatalf("page of %d items, limit %d", len(p.Items), q.Limit)
		}
		for _, in := range p.Items {
			ids = append(ids, in.ID)
		}
		if p.NextCursor == "" {
			return ids
		}
		if page > 100 {
			t.Fatal("endless walk")
		}
		if between != nil {
			between(page)
		}
		q.Cursor = p.NextCursor
	}
}

func TestListInstancesPaging(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	var aliceIDs, devIDs []string
	for i := range 23 {
		in := testInstance(fmt.Sprintf("a%03d", i*2), "alice")
		if i%3 == 0 {
			in.Labels = map[string]string{"env": "prod"}
		} else {
			devIDs = append(devIDs, in.ID)
		}
		mustCreate(t, s, in)
		aliceIDs = append(aliceIDs, in.ID)
	}
	mustCreate(t, s, testInstance("b001", "bob"))

	// Inserts between pages, before and after the cursor, change nothing
	// for the instances that existed all along.
	n := 0
	got := walk(t, s, store.ListQuery{Owner: "alice", Limit: 5}, func(int) {
		mustCreate(t, s, testInstance(fmt.Sprintf("a%03d", 1+n*8), "carol")) // other owner
		mustCreate(t, s, testInstance(fmt.Sprintf("a%03d", 3+n*8), "alice")) // interleaved
		n++
	})
	var old []string
	for _, id := range got {
		if slices.Contains(aliceIDs, id) {
			old = append(old, id)
		}
	}
	if !slices.Equal(old, aliceIDs) {
		t.Errorf("walk saw %v\nwant all of %v in order", old, aliceIDs)
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("owner listing not in strict ID order: %v", got)
	}

	// A selective filter across DynamoDB pages.
	got = walk(t, s, store.ListQuery{Owner: "alice", Labels: map[string]string{"env": "dev"}, Limit: 4}, nil)
	var wantDev []string
	for _, id := range got {
		if slices.Contains(aliceIDs, id) {
			wantDev = append(wantDev, id)
		}
	}
	if !slices.Equal(wantDev, devIDs) {
		t.Errorf("label filter: %v, want %v", wantDev, devIDs)
	}
	// An exact last page has no cursor.
	p, err := s.ListInstances(ctx, store.ListQuery{Owner: "bob", Limit: 1})
	if err != nil || len(p.Items) != 1 || p.NextCursor != "" {
		t.Errorf("single-item listing = %+v, %v", p, err)
	}
	p, err = s.ListInstances(ctx, store.ListQuery{Owner: "nobody"})
	if err != nil || len(p.Items) != 0 || p.NextCursor != "" {
		t.Errorf("empty listing = %+v, %v", p, err)
	}

	// Without an owner: a scan, and by_status queries.
	all := walk(t, s, store.ListQuery{Limit: 7}, nil)
	total := len(aliceIDs) + 1 + 2*n
	if len(all) != total || len(slices.Compact(slices.Sorted(slices.Values(all)))) != total {
		t.Errorf("scan listing: %d ids (%d distinct), want %d", len(all), len(slices.Compact(slices.Sorted(slices.Values(all)))), total)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "a000", ExpectVersion: 1, From: fsm.Pending, To: fsm.Failed}); err != nil {
		t.Fatal(err)
	}
	byStatus := walk(t, s, store.ListQuery{Statuses: []fsm.Status{fsm.Failed, fsm.Pending, fsm.Failed}, Limit: 4}, nil)
	if len(byStatus) != total || byStatus[0] != "a000" {
		t.Errorf("by status: %d ids starting %v, want %d starting a000", len(byStatus), byStatus[:1], total)
	}
	failed := walk(t, s, store.ListQuery{Owner: "alice", Statuses: []fsm.Status{fsm.Failed}}, nil)
	if !slices.Equal(failed, []string{"a000"}) {
		t.Errorf("owner + status filter: %v", failed)
	}

	// ListActive skips terminal instances.
	var active []string
	cur := ""
	for {
		p, err := s.ListActive(ctx, cur, 6)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range p.Items {
			active = append(active, in.ID)
		}
		if cur = p.NextCursor; cur == "" {
			break
		}
	}
	if len(active) != total-1 || slices.Contains(active, "a000") {
		t.Errorf("ListActive: %d ids, want %d without a000", len(active), total-1)
	}
	if _, err := s.ListActive(ctx, "garbage!", 5); !errors.Is(err, store.ErrInvalidCursor) {
		t.Errorf("garbage cursor: %v, want ErrInvalidCursor", err)
	}
	if _, err := s.ListInstances(ctx, store.ListQuery{Owner: "alice", Cursor: (cursor{Kind: cursorActive, ID: "x"}).encode()}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Errorf("cursor of another listing: %v, want ErrInvalidCursor", err)
	}
	if _, err := s.ListEvents(ctx, "a002", "AAAA", 5); !errors.Is(err, store.ErrInvalidCursor) {
		t.Errorf("bad events cursor: %v, want ErrInvalidCursor", err)
	}
}

func TestOutboxBookkeeping(t *testing.T) {
	t.Parallel()
	s, c := newTestStore(t)
	ctx := context.Background()
	base := c.Now()
	for i := range 5 {
		in := testInstance(fmt.Sprint("o", i), "alice")
		p := createParams(in, 0)
		p.Outbox.CreatedAt = base.Add(-time10s(5 - i))
		if _, err := s.CreateInstance(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	items, err := s.ListUndispatched(ctx, base.Add(-time10s(1)), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, []string{"ob-o0", "ob-o1", "ob-o2", "ob-o3"}) {
		t.Errorf("undispatched before -10s: %v", ids)
	}
	if err := s.MarkDispatched(ctx, "ob-o0", base); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkAttempt(ctx, "ob-o0", 1, "boom", base); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkAttempt(ctx, "ob-o1", 1, "worker first", base); err != nil { // before the dispatcher marked it
		t.Fatal(err)
	}
	if err := s.MarkDone(ctx, "ob-o2", base); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDispatched(ctx, "ob-o2", base); err != nil { // no-op on done
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, "ob-o3", 5, "gave up", base); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkAttempt(ctx, "ob-o3", 6, "late", base); err != nil { // no-op on failed
		t.Fatal(err)
	}
	for _, id := range []string{"nope"} {
		for name, err := range map[string]error{
			"dispatched": s.MarkDispatched(ctx, id, base),
			"done":       s.MarkDone(ctx, id, base),
			"attempt":    s.MarkAttempt(ctx, id, 1, "x", base),
			"failed":     s.MarkFailed(ctx, id, 1, "x", base),
		} {
			if !errorsIsNotFound(err) {
				t.Errorf("mark %s of unknown item = %v, want ErrNotFound", name, err)
			}
		}
	}
	want := map[string]container.OutboxState{"ob-o0": container.OutboxDispatched, "ob-o1": container.OutboxPending,
		"ob-o2": container.OutboxDone, "ob-o3": container.OutboxFailed, "ob-o4": container.OutboxPending}
	for id, st := range want {
		ob, err := s.GetOutbox(ctx, id)
		if err != nil || ob.State != st {
			t.Errorf("%s: %+v, %v; want state %s", id, ob, err, st)
		}
	}
	if ob, _ := s.GetOutbox(ctx, "ob-o0"); ob.Attempts != 1 || ob.LastError != "boom" || ob.DispatchedAt == nil {
		t.Errorf("attempt not recorded: %+v", ob)
	}
	items, err = s.ListUndispatched(ctx, base.Add(time10s(1)), 10)
	if err != nil || len(items) != 2 || items[0].ID != "ob-o1" || items[1].ID != "ob-o4" {
		t.Errorf("undispatched after marks: %+v, %v", items, err)
	}
	// A repeated MarkDone keeps the first expiry; past it the item is gone
	// for every read and mark, whether or not TTL has removed it.
	if err := s.MarkDone(ctx, "ob-o2", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.Advance(store.OutboxRetention + time.Minute)
	if _, err := s.GetOutbox(ctx, "ob-o2"); !errorsIsNotFound(err) {
		t.Errorf("done item past retention: %v, want ErrNotFound", err)
	}
	if err := s.MarkDone(ctx, "ob-o2", c.Now()); !errorsIsNotFound(err) {
		t.Errorf("MarkDone of an expired item: %v, want ErrNotFound", err)
	}
	if _, err := s.GetOutbox(ctx, "ob-o0"); err != nil {
		t.Errorf("dispatched items do not expire: %v", err)
	}
}
