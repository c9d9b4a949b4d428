package fleetfanout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
)

// Sender is the loop's shard queue: Send takes at most queue.MaxBatch
// messages and, when some fail, returns a *queue.BatchError naming them
// (sqsqueue.Queue's contract).
type Sender interface {
	Send(ctx context.Context, msgs []queue.Outgoing) error
}

// ShardQueue is the loop's shard queue as its function uses it: Send the
// tick's messages, and Nack a record whose pass failed, so that it comes
// back after delay rather than after the queue's visibility timeout (at
// least the function's timeout, longer than a period: it would come back
// stale).
type ShardQueue interface {
	Sender
	Nack(ctx context.Context, d queue.Delivery, delay time.Duration) error
}

var _ ShardQueue = (*sqsqueue.Queue)(nil)

// Sent is what a tick that fanned out returns: the tick, how many shards
// and how many of their messages were sent.
type Sent struct {
	Tick   time.Time `json:"tick"`
	Shards int       `json:"shards"`
	Sent   int       `json:"sent"`
}

// Send sends one message per shard of n for tick to q, in batches of
// queue.MaxBatch, and says how many were sent. A batch that fails does
// not stop the others: its shards wait for the next tick, which covers
// them, and the error names them.
func Send(ctx context.Context, q Sender, n int, tick time.Time) (Sent, error) {
	sent := Sent{Tick: tick, Shards: n}
	shards := fleetshard.All(n)
	var errs []error
	for start := 0; start < len(shards); start += queue.MaxBatch {
		batch := make([]queue.Outgoing, 0, queue.MaxBatch)
		for _, s := range shards[start:min(start+queue.MaxBatch, len(shards))] {
			body, err := Message{Shard: s, Tick: tick}.Encode()
			if err != nil {
				return sent, err
			}
			batch = append(batch, queue.Outgoing{ID: "shard-" + strconv.Itoa(s.Index), Body: body})
		}
		err := q.Send(ctx, batch)
		var be *queue.BatchError
		switch {
		case err == nil:
			sent.Sent += len(batch)
		case errors.As(err, &be):
			sent.Sent += len(batch) - len(be.Failed)
			errs = append(errs, fmt.Errorf("fleetfanout: %v of %d shards not sent: %w", slices.Sorted(maps.Keys(be.Failed)), n, err))
		default:
			errs = append(errs, fmt.Errorf("fleetfanout: shards %d..%d of %d not sent: %w", start, start+len(batch)-1, n, err))
		}
	}
	return sent, errors.Join(errs...)
}
