package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func TestCreateGetRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	in := testInstance("i1", "alice")
	created := mustCreate(t, s, in)
	if created.EventSeq != 1 {
		t.Errorf("EventSeq = %d, want 1", created.EventSeq)
	}
	got, err := s.GetInstance(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.EventSeq = 1
	want.QuotaCounted = true // the store's quota rule counts every new instance
	want.UsageCounted = true // and its usage rule
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetInstance =\n%+v\nwant\n%+v", got, want)
	}
	if !reflect.DeepEqual(created, got) {
		t.Errorf("CreateInstance returned\n%+v\nGetInstance\n%+v", created, got)
	}
	if _, err := s.GetInstance(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetInstance(missing) = %v, want ErrNotFound", err)
	}
	// The same parameters again: the id is taken, even though the request
	// is byte for byte the same (no idempotent replay by request token).
	if _, err := s.CreateInstance(ctx, createParams(in, 0)); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("second CreateInstance = %v, want ErrAlreadyExists", err)
	}
	ob, err := s.GetOutbox(ctx, "ob-i1")
	if err != nil || ob.State != container.OutboxPending || ob.InstanceVersion != 1 {
		t.Errorf("GetOutbox = %+v, %v", ob, err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 1 {
		t.Errorf("AdmissionCount = %d, want 1", n)
	}
}

func TestCreateQueueFullAndIdempotency(t *testing.T) {
	t.Parallel()
	s, c := newTestStore(t)
	ctx := context.Background()
	for i := range 2 {
		if _, err := s.CreateInstance(ctx, createParams(testInstance(fmt.Sprint("q", i), "bob"), 2)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.CreateInstance(ctx, createParams(testInstance("q2", "bob"), 2))
	if !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("third create = %v, want ErrQueueFull", err)
	}
	if _, err := s.GetInstance(ctx, "q2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rejected create wrote the instance: %v", err)
	}
	// Unbounded creates still count.
	mustCreate(t, s, testInstance("q3", "bob"))
	if n, _ := s.AdmissionCount(ctx); n != 3 {
		t.Errorf("AdmissionCount = %d, want 3", n)
	}

	rec := store.IdempotencyRecord{Owner: "bob", Key: "k1", RequestHash: "h", Response: []byte(`{}`), CreatedAt: c.Now()}
	p := createParams(testInstance("d1", "bob"), 0)
	p.Idempotency = &rec
	if _, err := s.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}
	p = createParams(testInstance("d2", "bob"), 0)
	p.Idempotency = &rec
	if _, err := s.CreateInstance(ctx, p); !errors.Is(err, store.ErrDuplicateRequest) {
		t.Fatalf("create with used key = %v, want ErrDuplicateRequest", err)
	}
	if _, err := s.GetInstance(ctx, "d2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("duplicate request wrote the instance: %v", err)
	}
	// Once the record expires the key is free again.
	c.Advance(store.IdempotencyRetention + time.Second)
	if _, err := s.CreateInstance(ctx, p); err != nil {
		t.Fatalf("create after key expiry: %v", err)
	}
}

func TestTransition(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	mustCreate(t, s, testInstance("t1", "alice"))

	if _, err := s.Transition(ctx, store.TransitionParams{ID: "t1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Running}); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("pending → running = %v, want ErrInvalidTransition", err)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "nope", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing = %v, want ErrNotFound", err)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "t1", ExpectVersion: 2, From: fsm.Pending, To: fsm.Creating}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale version = %v, want ErrConflict", err)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: "t1", ExpectVersion: 1, From: fsm.Creating, To: fsm.Running}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("wrong from = %v, want ErrConflict", err)
	}

	got, err := s.Transition(ctx, store.TransitionParams{
		ID: "t1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
		Event: &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating},
		Update: func(in *container.Instance) {
			in.RuntimeNodeName = "host-a"
			in.Version = 99 // the store owns it
		},
		CompleteOutboxID: "ob-t1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != fsm.Creating || got.Version != 2 || got.EventSeq != 2 || got.RuntimeNodeName != "host-a" {
		t.Errorf("after transition: %+v", got)
	}
	if ob, _ := s.GetOutbox(ctx, "ob-t1"); ob.State != container.OutboxDone {
		t.Errorf("outbox state = %s, want done", ob.State)
	}
	if n, _ := s.AdmissionCount(ctx); n != 1 {
		t.Errorf("creating still holds the slot: count = %d, want 1", n)
	}

	// Leaving creating releases the slot; completing an unknown outbox id
	// is not the caller's error and creates nothing.
	exit := 0
	got, err = s.Transition(ctx, store.TransitionParams{
		ID: "t1", ExpectVersion: 2, From: fsm.Creating, To: fsm.Running,
		Update:           func(in *container.Instance) { in.ExitCode = &exit; now := time.Now(); in.StartedAt = &now },
		Outbox:           &container.OutboxItem{ID: "ob-t1-stop", InstanceID: "t1", Op: container.OpStop, InstanceVersion: 3},
		CompleteOutboxID: "never-written",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.EventSeq != 2 || got.Version != 3 || got.StartedAt == nil {
		t.Errorf("after second transition: %+v", got)
	}
	if n, _ := s.AdmissionCount(ctx); n != 0 {
		t.Errorf("running holds a slot: count = %d, want 0", n)
	}
	if _, err := s.GetOutbox(ctx, "never-written"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("completing a missing item created it: %v", err)
	}
	if ob, err := s.GetOutbox(ctx, "ob-t1-stop"); err != nil || ob.State != container.OutboxPending {
		t.Errorf("transition outbox = %+v, %v", ob, err)
	}
	// A field-only update keeps the status and skips the FSM; completing an
	// item that is already done (a redelivered message) is no obstacle.
	got, err = s.Transition(ctx, store.TransitionParams{ID: "t1", ExpectVersion: 3, From: fsm.Running, To: fsm.Running,
		Update: func(in *container.Instance) { in.StatusReason = "healthy" }, CompleteOutboxID: "ob-t1"})
	if err != nil || got.Version != 4 || got.StatusReason != "healthy" {
		t.Errorf("field-only update = %+v, %v", got, err)
	}
	// A duplicate outbox id is refused and nothing is written.
	_, err = s.Transition(ctx, store.TransitionParams{ID: "t1", ExpectVersion: 4, From: fsm.Running, To: fsm.StopPending,
		Outbox: &container.OutboxItem{ID: "ob-t1-stop", InstanceID: "t1", Op: container.OpStop, InstanceVersion: 5}})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("duplicate outbox id = %v, want ErrAlreadyExists", err)
	}
	if cur, _ := s.GetInstance(ctx, "t1"); cur.Version != 4 || cur.Status != fsm.Running {
		t.Errorf("refused transition changed the instance: %+v", cur)
	}
}

// TestConcurrentAppendsAndTransitions: appends never make a transition
// report a conflict, and seqs stay 1..n without gaps or repeats.
func TestConcurrentAppendsAndTransitions(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	mustCreate(t, s, testInstance("c1", "alice"))

	const appends = 12
	var wg sync.WaitGroup
	errs := make(chan error, appends+1)
	for i := range appends {
		wg.Go(func() {
			if _, err := s.AppendEvent(ctx, container.Event{InstanceID: "c1", Type: container.EventTransitionReject, Message: fmt.Sprint(i)}); err != nil {
				errs <- fmt.Errorf("append %d: %w", i, err)
			}
		})
	}
	wg.Go(func() {
		steps := []fsm.Status{fsm.Pending, fsm.Creating, fsm.Running, fsm.StopPending, fsm.Stopping, fsm.Stopped}
		for v := 1; v < len(steps); v++ {
			_, err := s.Transition(ctx, store.TransitionParams{ID: "c1", ExpectVersion: int64(v), From: steps[v-1], To: steps[v],
				Event: &container.Event{Type: "step", From: steps[v-1], To: steps[v]}})
			if err != nil {
				errs <- fmt.Errorf("transition %s: %w", steps[v], err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	page, err := s.ListEvents(ctx, "c1", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 + appends + 5
	if len(page.Items) != want {
		t.Fatalf("%d events, want %d", len(page.Items), want)
	}
	for i, ev := range page.Items {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	in, _ := s.GetInstance(ctx, "c1")
	if in.EventSeq != int64(want) || in.Version != 6 {
		t.Errorf("instance EventSeq=%d Version=%d, want %d, 6", in.EventSeq, in.Version, want)
	}
}

// TestConcurrentTransitionsOneWins: racing the same expected version, one
// caller wins and every other one sees ErrConflict.
func TestConcurrentTransitionsOneWins(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	mustCreate(t, s, testInstance("r1", "alice"))
	const n = 8
	var wg sync.WaitGroup
	results := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.Transition(ctx, store.TransitionParams{ID: "r1", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
				Event: &container.Event{Type: container.EventCreating}})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("loser got %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d winners, want 1", won)
	}
	if n, _ := s.AdmissionCount(ctx); n != 1 {
		t.Errorf("AdmissionCount = %d, want 1", n)
	}
}

func TestDeleteKeepsHistory(t *testing.T) {
	t.Parallel()
	s, c := newTestStore(t)
	ctx := context.Background()
	mustCreate(t, s, testInstance("x1", "alice"))
	// More events than one transaction can stamp.
	for i := range 120 {
		if _, err := s.AppendEvent(ctx, container.Event{InstanceID: "x1", Type: "note", Message: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: "x1", ExpectVersion: 2, Event: container.Event{Type: container.EventDeleted}}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale delete = %v, want ErrConflict", err)
	}
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: "x1", ExpectVersion: 1, Event: container.Event{Type: container.EventDeleted}, CompleteOutboxID: "ob-x1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: "x1", ExpectVersion: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	if _, err := s.AppendEvent(ctx, container.Event{InstanceID: "x1", Type: "late"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append after delete = %v, want ErrNotFound", err)
	}
	if n, _ := s.AdmissionCount(ctx); n != 0 {
		t.Errorf("delete of a pending instance kept its slot: %d", n)
	}
	if ob, _ := s.GetOutbox(ctx, "ob-x1"); ob.State != container.OutboxDone {
		t.Errorf("outbox state %s, want done", ob.State)
	}

	var all []container.Event
	cur := ""
	for {
		page, err := s.ListEvents(ctx, "x1", cur, 50)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if cur = page.NextCursor; cur == "" {
			break
		}
	}
	if len(all) != 122 || all[0].Seq != 1 || all[121].Seq != 122 || all[121].Type != container.EventDeleted {
		t.Fatalf("history after delete: %d events, first %+v, last %+v", len(all), all[0], all[len(all)-1])
	}
	// Every event carries the TTL, including those stamped after the commit.
	for _, seq := range []int64{1, 20, 27, 28, 122, 0} {
		out, err := s.client.GetItem(ctx, getEventInput(s, "x1", seq))
		if err != nil || out.Item[AttrExpiresAt] == nil {
			t.Errorf("event %d: expires_at missing (%v)", seq, err)
		}
	}

	c.Advance(store.EventRetention - time.Minute)
	if _, err := s.ListEvents(ctx, "x1", "", 10); err != nil {
		t.Errorf("history within retention: %v", err)
	}
	c.Advance(2 * time.Minute)
	if _, err := s.ListEvents(ctx, "x1", "", 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("history after retention = %v, want ErrNotFound", err)
	}
	if _, err := s.ListEvents(ctx, "never", "", 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("history of unknown instance = %v, want ErrNotFound", err)
	}
	// The retained history keeps the id taken.
	if _, err := s.CreateInstance(ctx, createParams(testInstance("x1", "alice"), 0)); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("re-create of a deleted id = %v, want ErrAlreadyExists", err)
	}
}
