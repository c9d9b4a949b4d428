package worker

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/queue"
)

// Result says what to do with a delivery: acknowledge it, or let it come
// back after Delay.
type Result struct {
	Ack   bool
	Delay time.Duration
	// Reason is why (for logs and tests): "done", "stale: …", "retry: …",
	// "failed: …".
	Reason string
	// Requeue, when set, replaces the redelivery: the caller sends this
	// fresh message (it carries its own delay) and then acknowledges the
	// delivery, so that a wait for an unavailable runtime does not count
	// toward the queue's dead-letter limit. Should the send fail, the
	// caller hands the delivery back after Delay instead.
	Requeue *queue.Outgoing
}

func ack(reason string) Result { return Result{Ack: true, Reason: reason} }

// Process handles one delivery: the handler of its operation inside the
// worker's middleware.
func (w *Worker) Process(ctx context.Context, d queue.Delivery) Result {
	return resultOf(w.handler(ctx, &Job{Delivery: d}))
}

// pipeline is the worker's Handler: each concern a middleware, the first
// the outermost. A failure travels outward until a layer that knows it
// settles it: finish (done, stale), waiting (unavailable, receiver),
// retrying (retryable), failing (everything else).
func (w *Worker) pipeline(filter Middleware) Handler {
	return chain(w.route,
		w.decode,   // poison.go: undecodable → acknowledged
		filter,     // Options.Filter, on the decoded message
		w.measure,  // metrics.go
		w.failing,  // fail.go
		w.retrying, // retry.go
		w.waiting,  // wait.go
		w.dedupe,   // duplicate.go: item gone or finished → acknowledged
		w.finish)   // finish.go: done or stale → item marked done
}

// route hands the job to its operation's handler. Every op that decode
// admits (container.Op.Valid) has one.
func (w *Worker) route(ctx context.Context, j *Job) error {
	switch j.Msg.Op {
	case container.OpCreate:
		return w.create(ctx, j.Log, j.Msg, j.mark())
	case container.OpStart:
		return w.start(ctx, j.Log, j.Msg, j.mark())
	case container.OpStop:
		return w.stop(ctx, j.Log, j.Msg, j.mark())
	case container.OpDelete:
		return w.delete(ctx, j.Log, j.Msg, j.mark())
	case container.OpCleanupStop, container.OpCleanupDelete, container.OpGroupStop, container.OpGroupDelete:
		return w.cleanup(ctx, j.Log, j.Msg)
	case container.OpDeliver:
		return w.deliver(ctx, j)
	case container.OpPause, container.OpResume:
		return w.pauseHandler(ctx, j)
	}
	return nil
}
