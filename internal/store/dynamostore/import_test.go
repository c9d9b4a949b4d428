package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// runThrough brings a new instance to running on host through the store's
// own writes: create, claim (completing the create item), start.
func runThrough(t *testing.T, s *Store, in container.Instance, host string) container.Instance {
	t.Helper()
	cur := mustCreate(t, s, in)
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		p := store.TransitionParams{ID: in.ID, ExpectVersion: cur.Version, From: cur.Status, To: to,
			Event:  &container.Event{Type: "Test", From: cur.Status, To: to, At: fixtureTime},
			Update: func(i *container.Instance) { i.RuntimeNodeName = host; i.RuntimeID = "c-" + i.ID }}
		if to == fsm.Creating {
			p.CompleteOutboxID = "ob-" + in.ID
		}
		var err error
		if cur, err = s.Transition(context.Background(), p); err != nil {
			t.Fatalf("Transition(%s → %s): %v", in.ID, to, err)
		}
	}
	return cur
}

func rawInstance(t *testing.T, s *Store, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.instances),
		Key: instanceKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem %s: %v (found: %v)", id, err, out != nil && out.Item != nil)
	}
	return out.Item
}

func allActive(t *testing.T, list func(cur string) (store.Page[container.Instance], error)) []container.Instance {
	t.Helper()
	var all []container.Instance
	for cur := ""; ; {
		p, err := list(cur)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Items...)
		if cur = p.NextCursor; cur == "" {
			return all
		}
	}
}

// TestImportInstancesReadsBack exports running instances written by the
// store's own path and imports them, with more made up to fill several
// batches, into fresh tables: the items are those the store wrote (less
// what belongs to the counters an import leaves alone), and GetInstance,
// ListActive and ListActiveInBucket read back exactly the instances given.
func TestImportInstancesReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := newTestStore(t)
	dst, _ := newTestStore(t)
	var given []container.Instance
	for i := range 3 {
		run := runThrough(t, src, testInstance(fmt.Sprintf("w%d", i), "alice"), fmt.Sprintf("host-%d", i))
		// Exported as uncounted: the import writes no quota or usage items.
		run.QuotaCounted, run.UsageCounted = false, false
		given = append(given, run)
	}
	stopped := testInstance("ended", "bob")
	stopped.Status, stopped.Version, stopped.EventSeq, stopped.RuntimeNodeName = fsm.Stopped, 5, 5, "host-0"
	given = append(given, stopped)
	for i := range 3*maxBatchWrite + 1 {
		in := testInstance(fmt.Sprintf("m%03d", i), "carol")
		in.Status, in.Version, in.EventSeq, in.RuntimeNodeName = fsm.Running, 3, 3, fmt.Sprintf("host-%d", i%7)
		given = append(given, in)
	}
	if err := dst.ImportInstances(ctx, given, ImportOptions{Concurrency: 2}); err != nil {
		t.Fatalf("ImportInstances: %v", err)
	}

	for _, want := range given[:3] {
		wrote := rawInstance(t, src, want.ID)
		for _, counter := range []string{AttrAdmissionShard, "quota_counted", "usage_counted"} {
			if _, ok := wrote[counter]; !ok {
				t.Errorf("%s: the store's own write has no %s (the comparison below drops it for nothing)", want.ID, counter)
			}
			delete(wrote, counter)
		}
		if got := rawInstance(t, dst, want.ID); !reflect.DeepEqual(got, wrote) {
			t.Errorf("%s: imported item\n%v\nthe store wrote\n%v", want.ID, got, wrote)
		}
	}
	var active []container.Instance
	buckets := map[int]bool{}
	for _, want := range given {
		got, err := dst.GetInstance(ctx, want.ID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GetInstance(%s) =\n%+v, %v\nwant\n%+v", want.ID, got, err, want)
		}
		if b, listed := store.NodeBucket(want); listed {
			active = append(active, want)
			buckets[b] = true
		}
	}
	byID := func(a, b container.Instance) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(active, byID)
	listed := allActive(t, func(cur string) (store.Page[container.Instance], error) { return dst.ListActive(ctx, cur, 10) })
	slices.SortFunc(listed, byID)
	if !reflect.DeepEqual(listed, active) {
		t.Errorf("ListActive: %d instances, want the %d active ones given", len(listed), len(active))
	}
	var inBuckets []container.Instance
	for _, b := range slices.Sorted(maps.Keys(buckets)) {
		page := allActive(t, func(cur string) (store.Page[container.Instance], error) {
			return dst.ListActiveInBucket(ctx, b, cur, 10)
		})
		for _, in := range page {
			if want, _ := store.NodeBucket(in); want != b {
				t.Errorf("%s listed in bucket %d, its node's is %d", in.ID, b, want)
			}
		}
		inBuckets = append(inBuckets, page...)
	}
	slices.SortFunc(inBuckets, byID)
	if !reflect.DeepEqual(inBuckets, active) {
		t.Errorf("ListActiveInBucket over the buckets: %d instances, want the %d active ones given", len(inBuckets), len(active))
	}
	// The imported history goes on from EventSeq.
	ev, err := dst.AppendEvent(ctx, container.Event{InstanceID: "w0", Type: "Test", At: fixtureTime})
	if err != nil || ev.Seq != given[0].EventSeq+1 {
		t.Errorf("AppendEvent after the import = seq %d, %v; want seq %d", ev.Seq, err, given[0].EventSeq+1)
	}
}

// TestImportInstancesRefuses: an instance the import cannot load without
// writing counters or overwriting its own batch is refused before anything
// is written.
func TestImportInstancesRefuses(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	running := func(id string) container.Instance {
		in := testInstance(id, "alice")
		in.Status, in.Version, in.EventSeq, in.RuntimeNodeName = fsm.Running, 3, 3, "host-0"
		return in
	}
	for _, tc := range []struct {
		name string
		bad  func(*container.Instance)
	}{
		{"pending holds a slot", func(in *container.Instance) { in.Status = fsm.Pending }},
		{"creating holds a slot", func(in *container.Instance) { in.Status = fsm.Creating }},
		{"quota counted", func(in *container.Instance) { in.QuotaCounted = true }},
		{"usage counted", func(in *container.Instance) { in.UsageCounted = true }},
		{"no id", func(in *container.Instance) { in.ID = "" }},
		{"no status", func(in *container.Instance) { in.Status = "" }},
		{"no version", func(in *container.Instance) { in.Version = 0 }},
		{"id given twice", func(in *container.Instance) { in.ID = "ok-" + in.Owner }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := running("ok-alice")
			bad := running("bad")
			tc.bad(&bad)
			err := s.ImportInstances(ctx, []container.Instance{ok, bad}, ImportOptions{})
			if !errors.Is(err, store.ErrInvalidParams) {
				t.Fatalf("ImportInstances = %v, want ErrInvalidParams", err)
			}
			if _, err := s.GetInstance(ctx, ok.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetInstance(%s) after the refused import = %v, want ErrNotFound", ok.ID, err)
			}
		})
	}
}

// TestImportInstancesFails: a batch DynamoDB rejects (an item over its
// 400 KB limit) and a cancelled context end the import with an error.
func TestImportInstancesFails(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	many := make([]container.Instance, 4*maxBatchWrite)
	for i := range many {
		in := testInstance(fmt.Sprintf("f%03d", i), "alice")
		in.Status, in.Version, in.EventSeq, in.RuntimeNodeName = fsm.Running, 3, 3, "host-0"
		many[i] = in
	}
	huge := slices.Clone(many)
	huge[len(huge)-1].Labels = map[string]string{"big": strings.Repeat("x", 500<<10)}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		ins  []container.Instance
		want error
	}{
		{"an item over 400 KB", context.Background(), huge, nil},
		{"cancelled", cancelled, many, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.ImportInstances(tc.ctx, tc.ins, ImportOptions{Concurrency: 2})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("ImportInstances = %v, want an error (%v)", err, tc.want)
			}
		})
	}
}
