package dynamostore

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func time10s(n int) time.Duration { return time.Duration(n) * 10 * time.Second }

func errorsIsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

func TestTablesLayout(t *testing.T) {
	defs := Tables("p-")
	byName := map[string]TableDef{}
	for _, d := range defs {
		byName[d.Table] = d
		if got := aws.ToString(d.Create.TableName); got != "p-"+d.Table {
			t.Errorf("table %s named %s", d.Table, got)
		}
	}
	if len(byName) != 6 {
		t.Fatalf("%d tables", len(byName))
	}
	inst := byName[TableInstances].Create
	var gsis []string
	for _, g := range inst.GlobalSecondaryIndexes {
		gsis = append(gsis, aws.ToString(g.IndexName))
	}
	if want := []string{IndexByOwner, IndexByStatus, IndexByDeadline, IndexByNodeBucket}; !slices.Equal(gsis, want) {
		t.Errorf("instances GSIs: %v, want %v", gsis, want)
	}
	ob := byName[TableOutbox]
	if ob.Create.StreamSpecification == nil || !aws.ToBool(ob.Create.StreamSpecification.StreamEnabled) || ob.TTLAttribute != AttrExpiresAt {
		t.Errorf("outbox: stream %+v, TTL %q", ob.Create.StreamSpecification, ob.TTLAttribute)
	}
	for _, name := range []string{TableEvents, TableIdempotency} {
		if byName[name].TTLAttribute != AttrExpiresAt {
			t.Errorf("%s has no TTL", name)
		}
	}
}

func TestEnsureTablesIsIdempotent(t *testing.T) {
	t.Parallel()
	client := testClient(t)
	prefix := newTables(t, client)
	if err := EnsureTables(context.Background(), client, prefix); err != nil {
		t.Fatalf("second EnsureTables: %v", err)
	}
	out, err := client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(prefix + TableEvents)})
	if err != nil || aws.ToString(out.TimeToLiveDescription.AttributeName) != AttrExpiresAt {
		t.Errorf("TTL of events: %+v, %v", out, err)
	}
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	tpl := container.Template{Name: "nginx", Runtime: container.RuntimeDocker, Image: "nginx:1",
		Env: map[string]string{"A": "1"}, Ports: []container.Port{{ContainerPort: 80}}}
	got, created, err := s.PutTemplate(ctx, tpl)
	if err != nil || !created || got.Version != 1 || got.Image != "nginx:1" {
		t.Fatalf("first put = %+v, %v, %v", got, created, err)
	}
	tpl.Image = "nginx:2"
	got, created, err = s.PutTemplate(ctx, tpl)
	if err != nil || created || got.Version != 2 {
		t.Fatalf("second put = %+v, %v, %v", got, created, err)
	}
	if _, _, err := s.PutTemplate(ctx, container.Template{Name: "alpine", Image: "alpine"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alpine" || list[1].Image != "nginx:2" {
		t.Errorf("ListTemplates = %+v, %v", list, err)
	}
	if err := s.DeleteTemplate(ctx, "nginx"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, "nginx"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete = %v", err)
	}
	if _, err := s.GetTemplate(ctx, "nginx"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get deleted = %v", err)
	}
}

func TestIdempotencyRecords(t *testing.T) {
	t.Parallel()
	s, c := newTestStore(t)
	ctx := context.Background()
	rec := store.IdempotencyRecord{Owner: "a:b", Key: "c", RequestHash: "h1", Response: []byte("one"),
		CreatedAt: c.Now()}
	if _, err := s.PutIdempotency(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// (owner "a", key "b:c") must not collide with (owner "a:b", key "c").
	other := rec
	other.Owner, other.Key, other.Response = "a", "b:c", []byte("two")
	if _, err := s.PutIdempotency(ctx, other); err != nil {
		t.Fatalf("distinct pair collided: %v", err)
	}
	dup := rec
	dup.Response = []byte("changed")
	got, err := s.PutIdempotency(ctx, dup)
	if !errors.Is(err, store.ErrAlreadyExists) || string(got.Response) != "one" {
		t.Errorf("repeat put = %+v, %v", got, err)
	}
	if got, err := s.GetIdempotency(ctx, "a:b", "c"); err != nil || got.RequestHash != "h1" || !got.CreatedAt.Equal(rec.CreatedAt) {
		t.Errorf("get = %+v, %v", got, err)
	}
	c.Advance(store.IdempotencyRetention + time.Second)
	if _, err := s.GetIdempotency(ctx, "a:b", "c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired get = %v, want ErrNotFound", err)
	}
	dup.CreatedAt = c.Now()
	if got, err := s.PutIdempotency(ctx, dup); err != nil || string(got.Response) != "changed" {
		t.Errorf("put over expired = %+v, %v", got, err)
	}
}

func TestRepairAdmission(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	for _, id := range []string{"p1", "p2", "p3"} {
		mustCreate(t, s, testInstance(id, "alice"))
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "p1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "p2", ExpectVersion: 1, From: fsm.Pending, To: fsm.Failed}); err != nil {
		t.Fatal(err)
	}
	// Knock the counter off by hand, as a bug or a manual edit would.
	e := admissionAdd(40)
	if _, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.counters), Key: counterKey(0),
		UpdateExpression: aws.String(e.update), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}); err != nil {
		t.Fatal(err)
	}
	before, after, err := s.RepairAdmission(ctx)
	if err != nil || before != 42 || after != 2 {
		t.Errorf("RepairAdmission = %d, %d, %v; want 42, 2", before, after, err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 2 {
		t.Errorf("AdmissionCount = %d, want 2", n)
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	s := New(NewLocalClient("http://"+addr), Options{TablePrefix: "x_"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.GetInstance(ctx, "i"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetInstance on a closed port = %v, want ErrUnavailable", err)
	}
	if _, err := s.CreateInstance(ctx, createParams(testInstance("i", "o"), 0)); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("CreateInstance on a closed port = %v, want ErrUnavailable", err)
	}
}
