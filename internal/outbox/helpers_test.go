package outbox_test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/testenv"
)

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

func testLogger(w *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestMain(m *testing.M) {
	// Components built without a Logger log to slog.Default: keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	m.Run()
}
