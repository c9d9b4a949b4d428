package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func testCreateAndGet(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	p.Instance.Team = "data"
	created := mustCreate(t, s, p)
	if created.Version != 1 || created.EventSeq != 1 || created.Status != fsm.Pending {
		t.Fatalf("created instance: version %d, event seq %d, status %s", created.Version, created.EventSeq, created.Status)
	}
	got := mustGet(t, s, p.Instance.ID)
	want := p.Instance
	want.EventSeq = 1
	want.QuotaCounted = true // the store's quota rule counts every new instance
	want.UsageCounted = true // and its usage rule
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("created_at %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt, got.UpdatedAt = want.CreatedAt, want.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(got.Spec, p.Instance.Spec) {
		t.Fatalf("spec did not round-trip: %+v", got.Spec)
	}
	ob, err := s.GetOutbox(ctx, p.Outbox.ID)
	if err != nil {
		t.Fatalf("GetOutbox: %v", err)
	}
	if ob.InstanceID != p.Instance.ID || ob.Op != container.OpCreate || ob.State != container.OutboxPending || ob.InstanceVersion != 1 {
		t.Fatalf("outbox item %+v", ob)
	}
	evs := allEvents(t, s, p.Instance.ID, 10)
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != container.EventCreateRequested || evs[0].InstanceID != p.Instance.ID ||
		evs[0].Actor != "alice" || !evs[0].At.Equal(p.Event.At) || evs[0].To != fsm.Pending {
		t.Fatalf("first event %+v", evs)
	}
	if n := admission(t, s); n != 1 {
		t.Fatalf("admission %d, want 1", n)
	}
	_, err = s.GetInstance(ctx, "no-such-instance")
	wantErr(t, "GetInstance(missing)", err, store.ErrNotFound)
	_, err = s.GetOutbox(ctx, "no-such-item")
	wantErr(t, "GetOutbox(missing)", err, store.ErrNotFound)
}

func testCreateDuplicateID(t *testing.T, s store.Store, c *Clock) {
	p := NewCreate(c, "alice")
	mustCreate(t, s, p)
	again := NewCreate(c, "alice")
	again.Instance.ID = p.Instance.ID
	again.Outbox.InstanceID = p.Instance.ID
	_, err := s.CreateInstance(context.Background(), again)
	wantErr(t, "CreateInstance(duplicate id)", err, store.ErrAlreadyExists)
	if _, err := s.GetOutbox(context.Background(), again.Outbox.ID); err == nil {
		t.Fatal("a refused create wrote its outbox item")
	}
	if n := admission(t, s); n != 1 {
		t.Fatalf("admission %d after a refused create, want 1", n)
	}
}

func testCreateQueueFull(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		p := NewCreate(c, "alice")
		p.MaxPending = 2
		mustCreate(t, s, p)
	}
	p := NewCreate(c, "alice")
	p.MaxPending = 2
	_, err := s.CreateInstance(ctx, p)
	wantErr(t, "third create with max 2", err, store.ErrQueueFull)
	_, err = s.GetInstance(ctx, p.Instance.ID)
	wantErr(t, "instance of a refused create", err, store.ErrNotFound)
	_, err = s.GetOutbox(ctx, p.Outbox.ID)
	wantErr(t, "outbox of a refused create", err, store.ErrNotFound)
	if n := admission(t, s); n != 2 {
		t.Fatalf("admission %d, want 2", n)
	}
	// No bound: still counted.
	p = NewCreate(c, "alice")
	mustCreate(t, s, p)
	if n := admission(t, s); n != 3 {
		t.Fatalf("admission %d, want 3", n)
	}
}

func testCreateIdempotency(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	rec := store.IdempotencyRecord{Owner: "alice", Key: "k1", RequestHash: "h1", Response: []byte(`{"id":"x"}`), CreatedAt: c.Now()}
	p := NewCreate(c, "alice")
	p.Idempotency = &rec
	mustCreate(t, s, p)
	got, err := s.GetIdempotency(ctx, "alice", "k1")
	if err != nil || got.RequestHash != "h1" || string(got.Response) != `{"id":"x"}` {
		t.Fatalf("GetIdempotency = %+v, %v", got, err)
	}
	p2 := NewCreate(c, "alice")
	p2.Idempotency = &store.IdempotencyRecord{Owner: "alice", Key: "k1", RequestHash: "h2", CreatedAt: c.Now()}
	_, err = s.CreateInstance(ctx, p2)
	wantErr(t, "create with a used key", err, store.ErrDuplicateRequest)
	_, err = s.GetInstance(ctx, p2.Instance.ID)
	wantErr(t, "instance of a duplicate create", err, store.ErrNotFound)
	if n := admission(t, s); n != 1 {
		t.Fatalf("admission %d, want 1", n)
	}
	// The same key of another owner is another record.
	p3 := NewCreate(c, "bob")
	p3.Idempotency = &store.IdempotencyRecord{Owner: "bob", Key: "k1", RequestHash: "h3", CreatedAt: c.Now()}
	mustCreate(t, s, p3)
	// After the retention the key may be used again.
	c.Advance(store.IdempotencyRetention + time.Minute)
	p4 := NewCreate(c, "alice")
	p4.Idempotency = &store.IdempotencyRecord{Owner: "alice", Key: "k1", RequestHash: "h4", CreatedAt: c.Now()}
	mustCreate(t, s, p4)
}

func testTransition(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	c.Advance(time.Second)
	exit := 0
	out, err := s.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
		Update: func(i *container.Instance) {
			if i.Status != fsm.Creating {
				t.Errorf("Update saw status %s, want creating", i.Status)
			}
			i.RuntimeNodeName = "host-a"
			i.ExitCode = &exit
			i.StatusReason = "picked up"
		},
		Event: &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating, At: c.Now(), Message: "worker"},
	})
	if err != nil {
		t.Fatalf("Transition: %v", err)
	}
	if out.Version != 2 || out.Status != fsm.Creating || out.RuntimeNodeName != "host-a" || out.EventSeq != 2 {
		t.Fatalf("after transition: %+v", out)
	}
	if !out.UpdatedAt.Equal(c.Now()) {
		t.Fatalf("updated_at %v, want the store clock %v", out.UpdatedAt, c.Now())
	}
	got := mustGet(t, s, inst.ID)
	if got.Version != 2 || got.Status != fsm.Creating || got.StatusReason != "picked up" || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("stored after transition: %+v", got)
	}
	if !reflect.DeepEqual(got.Spec, inst.Spec) {
		t.Fatal("transition lost the spec")
	}
	// Field-only update (From == To) bumps the version, keeps the status.
	out, err = s.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: 2, From: fsm.Creating, To: fsm.Creating,
		Update: func(i *container.Instance) { i.RuntimeID = "abc" },
	})
	if err != nil || out.Version != 3 || out.RuntimeID != "abc" || out.Status != fsm.Creating || out.EventSeq != 2 {
		t.Fatalf("field-only update: %+v, %v", out, err)
	}
	evs := allEvents(t, s, inst.ID, 10)
	if len(evs) != 2 || evs[1].Type != container.EventCreating || evs[1].From != fsm.Pending || evs[1].To != fsm.Creating || evs[1].Message != "worker" {
		t.Fatalf("events: %+v", evs)
	}
	checkGapless(t, evs)
}

func testTransitionErrors(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	cases := []struct {
		name   string
		p      store.TransitionParams
		target error
	}{
		{"fsm forbids", store.TransitionParams{ID: inst.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Running}, fsm.ErrInvalidTransition},
		{"stale version", store.TransitionParams{ID: inst.ID, ExpectVersion: 7, From: fsm.Pending, To: fsm.Creating}, store.ErrConflict},
		{"wrong from", store.TransitionParams{ID: inst.ID, ExpectVersion: 1, From: fsm.Running, To: fsm.StopPending}, store.ErrConflict},
		{"missing", store.TransitionParams{ID: "nope", ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating}, store.ErrNotFound},
	}
	for _, tc := range cases {
		tc.p.Event = &container.Event{Type: "X", At: c.Now()}
		ob := container.OutboxItem{ID: newID(), InstanceID: inst.ID, Op: container.OpStop, State: container.OutboxPending, CreatedAt: c.Now()}
		tc.p.Outbox = &ob
		_, err := s.Transition(ctx, tc.p)
		wantErr(t, tc.name, err, tc.target)
		if _, err := s.GetOutbox(ctx, ob.ID); err == nil {
			t.Fatalf("%s: a refused transition wrote its outbox item", tc.name)
		}
	}
	got := mustGet(t, s, inst.ID)
	if got.Version != 1 || got.Status != fsm.Pending || got.EventSeq != 1 {
		t.Fatalf("refused transitions changed the instance: %+v", got)
	}
	if evs := allEvents(t, s, inst.ID, 10); len(evs) != 1 {
		t.Fatalf("refused transitions wrote events: %+v", evs)
	}
}

func testTransitionWithOutbox(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	inst := mustCreate(t, s, p)
	inst = move(t, s, c, inst, fsm.Creating)
	// Completing the create's outbox item together with the last step.
	out, err := s.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Creating, To: fsm.Running,
		Event:            &container.Event{Type: container.EventStarted, At: c.Now()},
		CompleteOutboxID: p.Outbox.ID,
	})
	if err != nil {
		t.Fatalf("Transition with completion: %v", err)
	}
	ob, err := s.GetOutbox(ctx, p.Outbox.ID)
	if err != nil || ob.State != container.OutboxDone {
		t.Fatalf("completed outbox item: %+v, %v", ob, err)
	}
	// A user request writes its outbox item with the transition.
	stop := container.OutboxItem{ID: newID(), InstanceID: inst.ID, Op: container.OpStop, InstanceVersion: out.Version + 1,
		State: container.OutboxPending, CreatedAt: c.Now(), UpdatedAt: c.Now(), RequestID: "r2"}
	out, err = s.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: out.Version, From: fsm.Running, To: fsm.StopPending,
		Outbox: &stop, Event: &container.Event{Type: container.EventStopRequested, At: c.Now()},
	})
	if err != nil {
		t.Fatalf("Transition with outbox: %v", err)
	}
	got, err := s.GetOutbox(ctx, stop.ID)
	if err != nil || got.Op != container.OpStop || got.State != container.OutboxPending || got.InstanceVersion != out.Version || got.RequestID != "r2" {
		t.Fatalf("stop outbox item: %+v, %v", got, err)
	}
}

func testAdmissionRelease(t *testing.T, s store.Store, c *Clock) {
	a := mustCreate(t, s, NewCreate(c, "alice"))
	b := mustCreate(t, s, NewCreate(c, "alice"))
	d := mustCreate(t, s, NewCreate(c, "alice"))
	e := mustCreate(t, s, NewCreate(c, "alice"))
	if n := admission(t, s); n != 4 {
		t.Fatalf("admission %d, want 4", n)
	}
	a = move(t, s, c, a, fsm.Creating) // still holds its slot
	if n := admission(t, s); n != 4 {
		t.Fatalf("pending→creating released a slot: %d", n)
	}
	a = move(t, s, c, a, fsm.Running)
	if n := admission(t, s); n != 3 {
		t.Fatalf("creating→running: admission %d, want 3", n)
	}
	move(t, s, c, b, fsm.Failed)
	if n := admission(t, s); n != 2 {
		t.Fatalf("pending→failed: admission %d, want 2", n)
	}
	move(t, s, c, d, fsm.DeletePending)
	if n := admission(t, s); n != 1 {
		t.Fatalf("pending→delete_pending: admission %d, want 1", n)
	}
	// Deleting an instance that still holds a slot releases it.
	if err := s.DeleteInstance(context.Background(), store.DeleteParams{ID: e.ID, ExpectVersion: e.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatalf("DeleteInstance: %v", err)
	}
	if n := admission(t, s); n != 0 {
		t.Fatalf("delete of a pending instance: admission %d, want 0", n)
	}
	// Moves between non-holding statuses change nothing.
	move(t, s, c, a, fsm.StopPending)
	if n := admission(t, s); n != 0 {
		t.Fatalf("admission %d, want 0", n)
	}
}

func testRepairAdmission(t *testing.T, s store.Store, c *Clock) {
	a := mustCreate(t, s, NewCreate(c, "alice"))
	mustCreate(t, s, NewCreate(c, "bob"))
	move(t, s, c, move(t, s, c, a, fsm.Creating), fsm.Running)
	before, after, err := s.RepairAdmission(context.Background())
	if err != nil || before != 1 || after != 1 {
		t.Fatalf("RepairAdmission on an exact counter = %d, %d, %v; want 1, 1", before, after, err)
	}
	if n := admission(t, s); n != 1 {
		t.Fatalf("admission %d after repair, want 1", n)
	}
}

func testAppendEvent(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	code := 137
	ev, err := s.AppendEvent(ctx, container.Event{InstanceID: inst.ID, Type: container.EventTransitionReject,
		From: fsm.Pending, To: fsm.Running, At: c.Now(), Message: "runtime said started", ExitCode: &code})
	if err != nil || ev.Seq != 2 {
		t.Fatalf("AppendEvent = %+v, %v", ev, err)
	}
	got := mustGet(t, s, inst.ID)
	if got.Version != 1 {
		t.Fatalf("AppendEvent changed the version to %d", got.Version)
	}
	// A transition read before the append still succeeds: only version and
	// status guard a transition, not the event sequence.
	out := move(t, s, c, inst, fsm.Creating)
	if out.Version != 2 || out.EventSeq != 3 {
		t.Fatalf("transition after append: %+v", out)
	}
	evs := allEvents(t, s, inst.ID, 10)
	checkGapless(t, evs)
	if evs[1].ExitCode == nil || *evs[1].ExitCode != 137 || evs[1].Type != container.EventTransitionReject {
		t.Fatalf("appended event: %+v", evs[1])
	}
	_, err = s.AppendEvent(ctx, container.Event{InstanceID: "nope", Type: "X", At: c.Now()})
	wantErr(t, "AppendEvent(missing)", err, store.ErrNotFound)
}

func testDelete(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	inst := mustCreate(t, s, p)
	inst = move(t, s, c, inst, fsm.DeletePending)
	inst = move(t, s, c, inst, fsm.Deleting)
	err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version,
		Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, At: c.Now()}, CompleteOutboxID: p.Outbox.ID})
	if err != nil {
		t.Fatalf("DeleteInstance: %v", err)
	}
	_, err = s.GetInstance(ctx, inst.ID)
	wantErr(t, "Get after delete", err, store.ErrNotFound)
	ob, err := s.GetOutbox(ctx, p.Outbox.ID)
	if err != nil || ob.State != container.OutboxDone {
		t.Fatalf("outbox completed with delete: %+v, %v", ob, err)
	}
	evs := allEvents(t, s, inst.ID, 2)
	checkGapless(t, evs)
	if len(evs) != 4 || evs[3].Type != container.EventDeleted {
		t.Fatalf("events after delete: %+v", evs)
	}
	if page, err := s.ListInstances(ctx, store.ListQuery{Owner: "alice"}); err != nil || len(page.Items) != 0 {
		t.Fatalf("deleted instance still listed: %+v, %v", page.Items, err)
	}
	c.Advance(store.EventRetention - time.Hour)
	if evs := allEvents(t, s, inst.ID, 10); len(evs) != 4 {
		t.Fatalf("events before retention ends: %d", len(evs))
	}
	c.Advance(2 * time.Hour)
	_, err = s.ListEvents(ctx, inst.ID, "", 10)
	wantErr(t, "ListEvents after retention", err, store.ErrNotFound)
	_, err = s.ListEvents(ctx, "never-existed", "", 10)
	wantErr(t, "ListEvents(unknown)", err, store.ErrNotFound)
}

func testDeleteErrors(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: 9, Event: container.Event{Type: container.EventDeleted, At: c.Now()}})
	wantErr(t, "DeleteInstance(stale)", err, store.ErrConflict)
	mustGet(t, s, inst.ID)
	err = s.DeleteInstance(ctx, store.DeleteParams{ID: "nope", ExpectVersion: 1, Event: container.Event{Type: container.EventDeleted, At: c.Now()}})
	wantErr(t, "DeleteInstance(missing)", err, store.ErrNotFound)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: 1, Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: 1, Event: container.Event{Type: container.EventDeleted, At: c.Now()}})
	wantErr(t, "DeleteInstance twice", err, store.ErrNotFound)
}
