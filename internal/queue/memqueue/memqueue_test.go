package memqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
)

func out(id string) queue.Outgoing { return queue.Outgoing{ID: id, Body: []byte(id)} }

func TestCloseWakesReceivers(t *testing.T) {
	q := memqueue.New(memqueue.Options{})
	errs := make(chan error, 3)
	var started sync.WaitGroup
	for range 3 {
		started.Add(1)
		go func() {
			started.Done()
			_, err := q.Receive(context.Background(), 1, time.Minute)
			errs <- err
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // let them reach the wait
	_ = q.Close()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, memqueue.ErrClosed) {
				t.Errorf("Receive after Close: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting Receive did not return after Close")
		}
	}
	if err := q.Send(context.Background(), []queue.Outgoing{out("a")}); !errors.Is(err, memqueue.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStaleHandles(t *testing.T) {
	ctx := context.Background()
	q := memqueue.New(memqueue.Options{VisibilityTimeout: 50 * time.Millisecond})
	defer q.Close()
	if err := q.Send(ctx, []queue.Outgoing{out("a")}); err != nil {
		t.Fatal(err)
	}
	d1, _ := q.Receive(ctx, 1, time.Second)
	d2, _ := q.Receive(ctx, 1, time.Second) // after the visibility timeout
	if len(d1) != 1 || len(d2) != 1 || d2[0].ReceiveCount != 2 {
		t.Fatalf("deliveries %v, %v", d1, d2)
	}
	if err := q.Ack(ctx, d1[0]); !errors.Is(err, memqueue.ErrInvalidHandle) {
		t.Errorf("Ack with the first, stale handle: %v, want ErrInvalidHandle", err)
	}
	if err := q.Nack(ctx, d1[0], 0); !errors.Is(err, memqueue.ErrInvalidHandle) {
		t.Errorf("Nack with the stale handle: %v, want ErrInvalidHandle", err)
	}
	if s := q.Stats(); s.InFlight != 1 {
		t.Errorf("stats %+v after stale acks, want the message still in flight", s)
	}
	// The latest handle still acks after its visibility timeout (as in SQS),
	// but cannot nack a message no longer in flight.
	time.Sleep(100 * time.Millisecond)
	if err := q.Nack(ctx, d2[0], 0); !errors.Is(err, memqueue.ErrInvalidHandle) {
		t.Errorf("Nack of a message back to visible: %v, want ErrInvalidHandle", err)
	}
	if err := q.Ack(ctx, d2[0]); err != nil {
		t.Errorf("Ack with the latest handle after the visibility timeout: %v", err)
	}
	if err := q.Ack(ctx, d2[0]); !errors.Is(err, memqueue.ErrInvalidHandle) {
		t.Errorf("second Ack: %v, want ErrInvalidHandle", err)
	}
	if s := q.Stats(); s.Total() != 0 {
		t.Errorf("stats %+v after the ack", s)
	}
}

func TestDefaultDeadLetterQueue(t *testing.T) {
	ctx := context.Background()
	q := memqueue.New(memqueue.Options{Name: "work", MaxReceives: 1, Capacity: 1})
	defer q.Close()
	dlq := q.DeadLetter()
	if dlq == nil || dlq.Name() != "work-dlq" {
		t.Fatalf("DeadLetter() = %v", dlq)
	}
	// The DLQ takes dead letters beyond its own capacity.
	for i := range 3 {
		if err := q.Send(ctx, []queue.Outgoing{out(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
		ds, _ := q.Receive(ctx, 1, time.Second)
		if len(ds) != 1 {
			t.Fatal("no delivery")
		}
		if err := q.Nack(ctx, ds[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	if s := dlq.Stats(); s.Visible != 3 {
		t.Fatalf("dead-letter stats %+v, want 3 visible", s)
	}
	ds, _ := dlq.Receive(ctx, 10, 0)
	for _, d := range ds {
		// The receive count carries over from the work queue.
		if d.ReceiveCount != 2 {
			t.Errorf("dead letter %s: ReceiveCount %d, want 2", d.Body, d.ReceiveCount)
		}
	}
}

func TestDelayedMessagesCountAgainstCapacity(t *testing.T) {
	ctx := context.Background()
	q := memqueue.New(memqueue.Options{Capacity: 2})
	defer q.Close()
	err := q.Send(ctx, []queue.Outgoing{{ID: "a", Delay: time.Hour}, {ID: "b"}, {ID: "c"}})
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 1 || !errors.Is(be.Failed["c"], memqueue.ErrFull) {
		t.Fatalf("Send of 3 into capacity 2: %v", err)
	}
	if s := q.Stats(); s.Delayed != 1 || s.Visible != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestConcurrentStress sends, receives, acks and nacks from many goroutines
// (run it with -race): every message is acked exactly once and none is lost.
func TestConcurrentStress(t *testing.T) {
	ctx := context.Background()
	q := memqueue.New(memqueue.Options{VisibilityTimeout: 20 * time.Millisecond, Capacity: 1000})
	defer q.Close()
	const producers, perProducer, consumers = 4, 100, 6
	var sendWG sync.WaitGroup
	for p := range producers {
		sendWG.Add(1)
		go func() {
			defer sendWG.Done()
			for i := 0; i < perProducer; i += 10 {
				var batch []queue.Outgoing
				for j := range 10 {
					batch = append(batch, out(fmt.Sprintf("p%d-%d", p, i+j)))
				}
				if err := q.Send(ctx, batch); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var (
		mu    sync.Mutex
		acked = map[string]int{}
		total atomic.Int64
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(20 * time.Second)
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < producers*perProducer && time.Now().Before(deadline) {
				ds, err := q.Receive(ctx, 1+c%3, 50*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				for i, d := range ds {
					switch {
					case i%3 == 1 && d.ReceiveCount == 1:
						_ = q.Nack(ctx, d, time.Millisecond)
					case i%3 == 2 && d.ReceiveCount == 1:
						// leave it to the visibility timeout
					default:
						if err := q.Ack(ctx, d); err != nil {
							// A late ack after the timeout redelivered it: fine, it comes again.
							if !errors.Is(err, memqueue.ErrInvalidHandle) {
								t.Error(err)
							}
							continue
						}
						mu.Lock()
						acked[string(d.Body)]++
						mu.Unlock()
						total.Add(1)
					}
				}
			}
		}()
	}
	sendWG.Wait()
	wg.Wait()
	if len(acked) != producers*perProducer {
		t.Fatalf("%d distinct messages acked, want %d", len(acked), producers*perProducer)
	}
	for b, n := range acked {
		if n != 1 {
			t.Errorf("%s acked %d times", b, n)
		}
	}
	if s := q.Stats(); s.Total() != 0 {
		t.Errorf("stats %+v at the end", s)
	}
}
