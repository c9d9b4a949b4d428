package reconcile_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// (e) The admission counter, knocked off as a bug or a hand edit would (no
// store method can: the test writes the backend's counter item directly),
// is repaired by the pass and reported before/after.
func TestAdmissionCounterRepaired(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		s := openCorrupted(t, b.Name, 42, func(s store.Store) {
			// Three creates in flight (two pending, one creating), one ended.
			m := manager.New(manager.Options{Store: s, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			if _, _, err := m.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true},
				container.Template{Name: "t", Runtime: "docker", Image: "img", Command: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			var ids []container.Instance
			for range 4 {
				res, err := m.CreateByTemplate(context.Background(), alice, manager.CreateRequest{Template: "t"}, nil, "")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.Instance)
			}
			mustTransition(t, s, ids[0], fsm.Creating)
			mustTransition(t, s, ids[1], fsm.Failed)
		})
		if n, _ := s.AdmissionCount(context.Background()); n != 42 {
			t.Fatalf("corrupting: admission count is %d, want 42", n)
		}
		r := newRig(t, s)
		rep := r.run(r.reconciler())
		if rep.AdmissionBefore != 42 || rep.AdmissionAfter != 3 {
			t.Fatalf("report %+v: want admission 42 → 3", rep)
		}
		if n, _ := s.AdmissionCount(context.Background()); n != 3 {
			t.Errorf("admission count after the pass %d, want 3", n)
		}
		if rep = r.run(r.reconciler()); rep.AdmissionBefore != 3 || rep.AdmissionAfter != 3 {
			t.Errorf("second pass: admission %d → %d, want 3 → 3", rep.AdmissionBefore, rep.AdmissionAfter)
		}
	})
}

func mustTransition(t *testing.T, s store.Store, inst container.Instance, to fsm.Status) {
	t.Helper()
	if _, err := s.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
		From: inst.Status, To: to}); err != nil {
		t.Fatal(err)
	}
}

// openCorrupted opens a fresh store of the backend, lets fill write to it,
// then sets the admission counter to n behind the store's back.
func openCorrupted(t *testing.T, backend string, n int, fill func(store.Store)) store.Store {
	t.Helper()
	ctx := context.Background()
	switch backend {
	case "bolt":
		path := filepath.Join(t.TempDir(), "berth.db")
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fill(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("counters"))
			if b == nil {
				return fmt.Errorf("no counters bucket")
			}
			return b.Put([]byte("admission"), binary.BigEndian.AppendUint64(nil, uint64(n)))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err = boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	case "dynamodb":
		client := teststores.DynamoClient(t)
		prefix := fmt.Sprintf("rc%d-", time.Now().UnixNano()%1e9)
		if err := dynamostore.EnsureTables(ctx, client, prefix); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
		// One counter item, so that setting it sets the whole count.
		s := dynamostore.New(client, dynamostore.Options{TablePrefix: prefix, AdmissionShards: 1})
		fill(s)
		_, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(dynamostore.TableName(prefix, dynamostore.TableCounters)),
			Key:                       map[string]types.AttributeValue{dynamostore.AttrName: &types.AttributeValueMemberS{Value: "admission"}},
			UpdateExpression:          aws.String("SET #c = :n"),
			ExpressionAttributeNames:  map[string]string{"#c": dynamostore.AttrCount},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	testenv.Missing(t, backend, "no way to corrupt its admission counter in this test")
	return nil
}

// The outbox sweeper is called with OutboxStaleAfter and its count
// reported; without one the step is skipped and says so; its failure is
// counted, not fatal to the pass.
func TestSweeperCalledAndReported(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		sw := &sweeper{n: 2}
		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.Sweeper = sw; o.OutboxStaleAfter = 45 * time.Second }))
		if rep.OutboxSwept != 2 || rep.SweepSkipped || sw.calls != 1 || sw.olderThan != 45*time.Second {
			t.Errorf("report %+v, sweeper %+v", rep, sw)
		}
		if rep := r.run(r.reconciler()); !rep.SweepSkipped || rep.OutboxSwept != 0 {
			t.Errorf("without a sweeper: %+v", rep)
		}
		sw = &sweeper{err: errSweep}
		rep, err := r.reconciler(func(o *reconcile.Options) { o.Sweeper = sw }).Run(testenv.Context(t, time.Minute))
		if err != nil || rep.Errors != 1 || len(rep.ErrorSamples) != 1 {
			t.Errorf("failing sweeper: %v, %+v", err, rep)
		}
	})
}

type sweeper struct {
	n         int
	err       error
	calls     int
	olderThan time.Duration
}

func (s *sweeper) Sweep(_ context.Context, olderThan time.Duration) (int, error) {
	s.calls++
	s.olderThan = olderThan
	return s.n, s.err
}

// A pass examines at most MaxInstances and the next one resumes after
// them; a pass past its deadline stops, says so, and is no error.
func TestPassIsBounded(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		for range 5 {
			r.create("sleeper")
		}
		rc := r.reconciler(func(o *reconcile.Options) { o.MaxInstances = 2 })
		var seen []int
		for range 3 {
			rep := r.run(rc)
			seen = append(seen, rep.Instances)
			if rep.Truncated != (rep.Instances == 2) {
				t.Errorf("instances %d, truncated %v", rep.Instances, rep.Truncated)
			}
		}
		if fmt.Sprint(seen) != "[2 2 1]" {
			t.Errorf("instances per pass %v, want [2 2 1]", seen)
		}
		if rep := r.run(rc); rep.Instances != 2 {
			t.Errorf("after a full round the walk starts again: %d instances", rep.Instances)
		}

		rep, err := r.reconciler(func(o *reconcile.Options) { o.PassTimeout = time.Nanosecond }).Run(testenv.Context(t, time.Minute))
		if err != nil || !rep.Truncated {
			t.Errorf("pass past its deadline: %v, %+v", err, rep)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.reconciler().Run(ctx); err == nil {
			t.Error("a pass whose caller cancelled it reported no error")
		}
	})
}

// Service (the local server's ticker) runs a pass at once and then every
// interval, until it is stopped; the test waits on its pass signal.
func TestServiceRunsPassesUntilStopped(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		sw := &countingSweeper{}
		svc := r.reconciler(func(o *reconcile.Options) { o.Sweeper = sw }).Service(20 * time.Millisecond)
		next := svc.NextPass()
		if err := svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			select {
			case <-next:
			case <-time.After(30 * time.Second):
				t.Fatalf("pass %d not signalled in 30 s", i+1)
			}
			next = svc.NextPass()
		}
		if n := sw.calls.Load(); n < 3 {
			t.Errorf("3 passes signalled, %d swept", n)
		}
		svc.Stop()
		if err := svc.Err(); err != nil {
			t.Errorf("stopped reconciler: %v", err)
		}
	})
}

type countingSweeper struct{ calls atomic.Int32 }

func (s *countingSweeper) Sweep(context.Context, time.Duration) (int, error) {
	s.calls.Add(1)
	return 0, nil
}
