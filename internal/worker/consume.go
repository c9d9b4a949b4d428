package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/queue"
)

// Consume plays the part of Lambda's SQS event source mapping for one
// queue: it receives messages, processes up to concurrency of them at once,
// acknowledges finished ones and hands failed ones back with their backoff
// delay. It returns when ctx ends, after the messages in hand are finished
// (a message whose processing was cut short comes back after its
// visibility timeout, so nothing is lost).
func (w *Worker) Consume(ctx context.Context, q queue.Queue, concurrency int) error {
	if concurrency < 1 {
		concurrency = 1
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// Wait for a free worker before receiving, so that messages are not
		// held invisible while they queue up here.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		free := 1 + concurrency - len(sem)
		<-sem
		ds, err := q.Receive(ctx, min(free, queue.MaxBatch), 2*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.log.WarnContext(ctx, "receiving from queue", "error", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		for _, d := range ds {
			sem <- struct{}{}
			wg.Add(1)
			go func(d queue.Delivery) {
				defer wg.Done()
				defer func() { <-sem }()
				w.handle(context.WithoutCancel(ctx), q, d)
			}(d)
		}
	}
}

// handle processes one delivery and settles it with the queue. Processing
// is not cancelled by shutdown: the message in hand is finished (a
// create keeps its slot until stable), bounded by the create start timeout.
func (w *Worker) handle(ctx context.Context, q queue.Queue, d queue.Delivery) {
	res := w.Process(ctx, d)
	if res.Requeue != nil && w.requeue(ctx, q, d, *res.Requeue) {
		res.Ack = true
	}
	var err error
	if res.Ack {
		err = q.Ack(ctx, d)
	} else {
		err = q.Nack(ctx, d, res.Delay)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		// Unsettled: the visibility timeout brings it back; processing is
		// idempotent.
		w.log.WarnContext(ctx, "settling message", "message_id", d.MessageID, "ack", res.Ack, "error", err)
	}
}

// sender sends messages to the queue a delivery came from.
type sender interface {
	Send(ctx context.Context, msgs []queue.Outgoing) error
}

// requeue sends a Result's fresh message and reports whether it went out;
// when it did not, the caller hands the delivery back instead.
func (w *Worker) requeue(ctx context.Context, q sender, d queue.Delivery, out queue.Outgoing) bool {
	if err := q.Send(ctx, []queue.Outgoing{out}); err != nil {
		w.log.WarnContext(ctx, "re-sending a message; handing it back instead", "message_id", d.MessageID, "error", err)
		return false
	}
	return true
}
