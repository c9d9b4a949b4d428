package outbox_test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/testenv"
)

// createParams is a valid create committed at "at" (the outbox item's
// CreatedAt, which dispatch latency and the sweep measure from).
func createParams(at time.Time) store.CreateParams {
	p := storetest.NewCreate(storetest.NewClock(), "alice")
	p.Instance.CreatedAt, p.Instance.UpdatedAt = at, at
	p.Outbox.CreatedAt, p.Outbox.UpdatedAt = at, at
	p.Event.At = at
	return p
}

// createItem commits a create and returns its outbox item as stored.
func createItem(t testing.TB, st store.Store, at time.Time) container.OutboxItem {
	t.Helper()
	p := createParams(at)
	if _, err := st.CreateInstance(context.Background(), p); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	return getItem(t, st, p.Outbox.ID)
}

func getItem(t testing.TB, st store.OutboxStore, id string) container.OutboxItem {
	t.Helper()
	it, err := st.GetOutbox(context.Background(), id)
	if err != nil {
		t.Fatalf("GetOutbox(%s): %v", id, err)
	}
	return it
}

// lifecycleItem commits a create, moves the instance to running and then
// asks for op (start, stop or delete), returning that request's outbox item.
func lifecycleItem(t testing.TB, st store.Store, op container.Op) container.OutboxItem {
	t.Helper()
	ctx := context.Background()
	p := createParams(time.Now())
	inst, err := st.CreateInstance(ctx, p)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			t.Fatalf("Transition to %s: %v", to, err)
		}
	}
	to := map[container.Op]fsm.Status{container.OpStart: fsm.StartPending, container.OpStop: fsm.StopPending, container.OpDelete: fsm.DeletePending}[op]
	ob := container.OutboxItem{ID: container.NewID(), InstanceID: inst.ID, Op: op, InstanceVersion: inst.Version + 1, RequestID: "req-" + string(op)}
	if _, err := st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to, Outbox: &ob}); err != nil {
		t.Fatalf("Transition to %s: %v", to, err)
	}
	return getItem(t, st, ob.ID)
}

// recordingQueue wraps a queue and records the size of every Send.
type recordingQueue struct {
	queue.Queue
	mu      sync.Mutex
	batches []int
}

func (r *recordingQueue) Send(ctx context.Context, msgs []queue.Outgoing) error {
	r.mu.Lock()
	r.batches = append(r.batches, len(msgs))
	r.mu.Unlock()
	return r.Queue.Send(ctx, msgs)
}

func (r *recordingQueue) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]int(nil), r.batches...)
	sort.Sort(sort.Reverse(sort.IntSlice(out)))
	return out
}

func memQueues(t testing.TB, capacity int) (create, lifecycle *memqueue.Queue) {
	create = memqueue.New(memqueue.Options{Name: "create", Capacity: capacity, VisibilityTimeout: time.Minute})
	lifecycle = memqueue.New(memqueue.Options{Name: "lifecycle", Capacity: capacity, VisibilityTimeout: time.Minute})
	t.Cleanup(func() { _ = create.Close(); _ = lifecycle.Close() })
	return create, lifecycle
}

// drain receives every message visible on q now.
func drain(t testing.TB, q queue.Queue) []queue.Delivery {
	t.Helper()
	var out []queue.Delivery
	for {
		ds, err := q.Receive(context.Background(), queue.MaxBatch, 0)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(ds) == 0 {
			return out
		}
		out = append(out, ds...)
	}
}

func decode(t testing.TB, d queue.Delivery) outbox.Message {
	t.Helper()
	m, err := outbox.Decode(d.Body)
	if err != nil {
		t.Fatalf("message body %q: %v", d.Body, err)
	}
	return m
}

func testLogger(w *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func TestMain(m *testing.M) {
	// Components built without a Logger log to slog.Default: keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	m.Run()
}
