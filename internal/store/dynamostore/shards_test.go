package dynamostore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// idInShard returns a new id whose index shard is n.
func idInShard(n int) string {
	for {
		if id := container.NewID(); shardOf(id) == n {
			return id
		}
	}
}

// TestEveryShardListed puts a pending and a running instance, and a pending
// outbox item, in every index shard, and lists them in pages smaller than a
// shard boundary crossing needs: a shard missing from a listing, or a
// cursor that skips or restarts a shard, fails it. Unlike the conformance
// suite's case it does not rely on chance to fill every shard.
func TestEveryShardListed(t *testing.T) {
	s, c := newTestStore(t)
	ctx := context.Background()
	var pending, running, outbox []string
	for n := range IndexShards {
		for _, st := range []fsm.Status{fsm.Pending, fsm.Running} {
			in := testInstance(idInShard(n), "alice")
			in.CreatedAt, in.UpdatedAt = c.Now(), c.Now()
			p := createParams(in, 0)
			p.Outbox.ID = idInShard(n)
			p.Outbox.CreatedAt, p.Outbox.UpdatedAt = in.CreatedAt, in.CreatedAt
			got, err := s.CreateInstance(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			outbox = append(outbox, p.Outbox.ID)
			if st == fsm.Pending {
				pending = append(pending, in.ID)
				continue
			}
			for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
				if got, err = s.Transition(ctx, store.TransitionParams{ID: got.ID, ExpectVersion: got.Version, From: got.Status, To: to}); err != nil {
					t.Fatal(err)
				}
			}
			running = append(running, in.ID)
		}
	}

	// Stored keys: the status with the instance's own shard, whatever the status.
	for _, id := range []string{pending[3], running[5]} {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.instances), Key: instanceKey(id), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := unmarshalInstance(out.Item)
		if got, want := sortValue(out.Item, AttrStatusKey), statusKey(in.Status, id); got != want {
			t.Errorf("%s: status_key %q, want %q", id, got, want)
		}
	}

	for _, limit := range []int{1, 3, IndexShards + 1} {
		var got []string
		for cur := ""; ; {
			page, err := s.ListActive(ctx, cur, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range page.Items {
				got = append(got, in.ID)
			}
			if cur = page.NextCursor; cur == "" {
				break
			}
		}
		// By status, then shard: pending before running, shard by shard.
		if want := append(slices.Clone(pending), running...); !slices.Equal(got, want) {
			t.Errorf("ListActive in pages of %d = %v, want %v", limit, got, want)
		}
	}
	walked := walk(t, s, store.ListQuery{Statuses: []fsm.Status{fsm.Running}, Limit: 2}, nil)
	if !slices.Equal(walked, running) {
		t.Errorf("ListInstances(running) in pages of 2 = %v, want %v", walked, running)
	}

	for _, limit := range []int{1, 5, 2*IndexShards + 1} {
		items, err := s.ListUndispatched(ctx, c.Now().Add(time.Second), limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.ID)
		}
		if want := outbox[:min(limit, len(outbox))]; !slices.Equal(got, want) {
			t.Errorf("ListUndispatched limit %d = %v, want %v", limit, got, want)
		}
	}
	if _, after, err := s.RepairAdmission(ctx); err != nil || after != len(pending) {
		t.Errorf("RepairAdmission = %d, %v; want %d", after, err, len(pending))
	}
}

// TestBackfillIndexKeys writes items as the store did before its index keys
// were sharded (no status_key; undispatched "pending") and before the node
// buckets (no node_bucket), and checks that the backfill makes them
// listable again (ListActive, ListActiveInBucket, ListUndispatched), once.
func TestBackfillIndexKeys(t *testing.T) {
	s, c := newTestStore(t)
	ctx := context.Background()
	in := testInstance(container.NewID(), "alice")
	in.CreatedAt, in.UpdatedAt = c.Now(), c.Now()
	p := createParams(in, 0)
	p.Outbox.CreatedAt, p.Outbox.UpdatedAt = in.CreatedAt, in.CreatedAt
	if _, err := s.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}
	fresh := mustCreate(t, s, testInstance(container.NewID(), "alice"))
	// Back to the old layout.
	for _, u := range []*dynamodb.UpdateItemInput{
		{TableName: aws.String(s.instances), Key: instanceKey(in.ID), UpdateExpression: aws.String("REMOVE status_key, node_bucket")},
		{TableName: aws.String(s.outbox), Key: outboxKey(p.Outbox.ID), UpdateExpression: aws.String("SET undispatched = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": strAV("pending")}},
	} {
		if _, err := s.client.UpdateItem(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() (active, undispatched []string) {
		page, err := s.ListActive(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			active = append(active, it.ID)
		}
		b, _ := store.NodeBucket(in)
		inBucket, err := s.ListActiveInBucket(ctx, b, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(inBucket.Items) != len(page.Items) {
			t.Fatalf("bucket %d holds %d instances, ListActive %d", b, len(inBucket.Items), len(page.Items))
		}
		items, err := s.ListUndispatched(ctx, c.Now().Add(time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			undispatched = append(undispatched, it.InstanceID)
		}
		return active, undispatched
	}
	if active, undispatched := listed(); slices.Contains(active, in.ID) || slices.Contains(undispatched, in.ID) {
		t.Fatalf("an old-layout item is listed before the backfill: active %v, undispatched %v", active, undispatched)
	}
	if ni, no, err := s.BackfillIndexKeys(ctx); err != nil || ni != 1 || no != 1 {
		t.Fatalf("BackfillIndexKeys = %d instances, %d outbox items, %v; want 1, 1", ni, no, err)
	}
	active, undispatched := listed()
	for _, id := range []string{in.ID, fresh.ID} {
		if !slices.Contains(active, id) || !slices.Contains(undispatched, id) {
			t.Fatalf("after the backfill %s is missing: active %v, undispatched %v", id, active, undispatched)
		}
	}
	if ni, no, err := s.BackfillIndexKeys(ctx); err != nil || ni != 0 || no != 0 {
		t.Fatalf("second BackfillIndexKeys = %d, %d, %v; want nothing to do", ni, no, err)
	}
}
