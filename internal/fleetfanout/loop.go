package fleetfanout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/lambdasqs"
)

// Loop is a sharded loop's Lambda handler: a tick either runs the whole
// pass (one shard, or no shard queue) or sends one message per shard to
// Queue; an SQS event of the shard queue runs each record's shard.
type Loop struct {
	// Name is the loop's, in the logs ("reconcile", "watch").
	Name string
	// Shards is fleet.shards; Nodes is how many nodes (Docker hosts,
	// Kubernetes clusters) are configured: the count is
	// fleetshard.Count(Shards, Nodes).
	Shards, Nodes int
	// Period is fleet.period: a shard message older than it is dropped.
	Period time.Duration
	// Queue is the loop's shard queue; nil: every tick runs the whole pass.
	Queue ShardQueue
	// Whole runs the tick's whole pass, as without sharding.
	Whole func(ctx context.Context, t Tick) (any, error)
	// Shard runs one shard's pass. An error fails its record, which SQS
	// delivers again.
	Shard func(ctx context.Context, s fleetshard.Shard) (any, error)
	// RetryDelay is how soon a record whose pass failed comes back.
	// Defaults to DefaultRetryDelay.
	RetryDelay time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Logger; nil: slog.Default().
	Logger *slog.Logger
}

// DefaultRetryDelay is Loop.RetryDelay's default: a failed shard pass
// (the store unreachable) is tried again well within its period.
const DefaultRetryDelay = 5 * time.Second

// Count is the loop's shard count.
func (l *Loop) Count() int { return fleetshard.Count(l.Shards, l.Nodes) }

// Handle is the function's handler: raw is a tick or an SQS event.
func (l *Loop) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	if isSQS(raw) {
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("fleetfanout: %s shard event: %w", l.Name, err)
		}
		return l.handleShards(ctx, ev), nil
	}
	var t Tick
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("fleetfanout: %s tick: %w", l.Name, err)
	}
	n := l.Count()
	if n <= 1 || l.Queue == nil {
		return l.Whole(ctx, t)
	}
	t.Input.Log(ctx, l.log())
	sent, err := Send(ctx, l.Queue, n, t.At(l.now()))
	l.log().InfoContext(ctx, "fanned out", "loop", l.Name, "tick", sent.Tick, "shards", n, "sent", sent.Sent, "error", err)
	return sent, err
}

// handleShards runs each record's shard (one with batch size 1) and
// reports the records whose pass failed. A record that is not a shard
// message, or is stale, is dropped: it succeeds without a pass.
func (l *Loop) handleShards(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		m, err := Decode([]byte(rec.Body))
		if err != nil {
			l.log().ErrorContext(ctx, "dropping a message that is not a shard's", "loop", l.Name, "message_id", rec.MessageId, "error", err)
			continue
		}
		if now := l.now(); m.Stale(now, l.Period) {
			l.log().WarnContext(ctx, "dropping a stale shard message: the next tick's covers its shard", "loop", l.Name,
				"shard", m.Shard.String(), "tick", m.Tick, "age", now.Sub(m.Tick), "period", l.Period)
			continue
		}
		rep, err := l.Shard(ctx, m.Shard)
		if err != nil {
			l.log().ErrorContext(ctx, "shard pass failed: its message comes back", "loop", l.Name, "shard", m.Shard.String(),
				"tick", m.Tick, "message_id", rec.MessageId, "error", err)
			l.retry(ctx, rec)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			continue
		}
		l.log().InfoContext(ctx, "shard pass", "loop", l.Name, "shard", m.Shard.String(), "tick", m.Tick, "report", rep)
	}
	return resp
}

// retry makes a failed record visible again after RetryDelay; if that
// fails it comes back after the queue's visibility timeout (and is then
// probably stale: the next tick covers its shard).
func (l *Loop) retry(ctx context.Context, rec events.SQSMessage) {
	if l.Queue == nil {
		return
	}
	delay := l.RetryDelay
	if delay <= 0 {
		delay = DefaultRetryDelay
	}
	if err := l.Queue.Nack(ctx, lambdasqs.Delivery(rec), delay); err != nil {
		l.log().WarnContext(ctx, "setting a failed shard's retry delay", "loop", l.Name, "message_id", rec.MessageId, "error", err)
	}
}

func (l *Loop) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
