package fleetfanout_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetfanout/fanouttest"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/queue"
)

// recorder is a loop's two passes, recording what they were called with.
type recorder struct {
	mu     sync.Mutex
	wholes int
	shards []fleetshard.Shard
	fail   map[int]int // shard index → failures left
}

func (r *recorder) loop(q fleetfanout.ShardQueue, shards, nodes int, now func() time.Time) *fleetfanout.Loop {
	return &fleetfanout.Loop{
		Name: "test", Shards: shards, Nodes: nodes, Period: time.Minute, Queue: q, RetryDelay: time.Second, Now: now,
		Whole: func(context.Context, fleetfanout.Tick) (any, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.wholes++
			return "whole", nil
		},
		Shard: func(_ context.Context, s fleetshard.Shard) (any, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.fail[s.Index] > 0 {
				r.fail[s.Index]--
				return nil, errors.New("store unreachable")
			}
			r.shards = append(r.shards, s)
			return "pass " + s.String(), nil
		},
	}
}

func schedulerTick(t *testing.T) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile("../../events/reconciler-scheduler.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// fixtureTick is events/reconciler-scheduler.json's scheduled time.
var fixtureTick = time.Date(2026, 11, 29, 8, 1, 0, 0, time.UTC)

// TestOneShardRunsInline: up to 100 nodes (and with fleet.shards 1 at any
// size) a tick runs the whole pass itself and sends nothing.
func TestOneShardRunsInline(t *testing.T) {
	t.Parallel()
	q := fanouttest.Queue(t)
	for _, c := range []struct{ shards, nodes int }{{0, 0}, {0, 100}, {1, 1000}} {
		r := &recorder{}
		out, err := r.loop(q, c.shards, c.nodes, nil).Handle(context.Background(), schedulerTick(t))
		if err != nil || out != "whole" || r.wholes != 1 {
			t.Fatalf("shards %d, %d nodes: %v, %v, %d whole passes; want the whole pass once", c.shards, c.nodes, out, err, r.wholes)
		}
	}
	if got := fanouttest.Records(t, q, 1, 2*time.Second); len(got) != 0 {
		t.Fatalf("an inline tick sent %d messages", len(got))
	}
}

// TestFanOutEachShardOnce: a tick of a 2,300-node fleet (23 shards: three
// batches) sends one message per shard, and running what the queue holds
// runs each shard once, with the tick's count.
func TestFanOutEachShardOnce(t *testing.T) {
	t.Parallel()
	q := fanouttest.Queue(t)
	r := &recorder{}
	l := r.loop(q, 0, 2300, func() time.Time { return fixtureTick.Add(5 * time.Second) })
	out, err := l.Handle(context.Background(), schedulerTick(t))
	if err != nil {
		t.Fatal(err)
	}
	if sent, ok := out.(fleetfanout.Sent); !ok || sent.Shards != 23 || sent.Sent != 23 || !sent.Tick.Equal(fixtureTick) || r.wholes != 0 {
		t.Fatalf("the tick returned %+v (whole passes %d), want 23 of 23 sent for %s", out, r.wholes, fixtureTick)
	}
	recs := fanouttest.Records(t, q, 23, 20*time.Second)
	if len(recs) != 23 {
		t.Fatalf("the queue holds %d messages, want 23", len(recs))
	}
	for _, rec := range recs {
		resp, err := l.Handle(context.Background(), fanouttest.Event(t, rec))
		if err != nil || len(resp.(events.SQSEventResponse).BatchItemFailures) != 0 {
			t.Fatalf("shard record: %v, %v", resp, err)
		}
	}
	slices.SortFunc(r.shards, func(a, b fleetshard.Shard) int { return a.Index - b.Index })
	if !slices.Equal(r.shards, fleetshard.All(23)) {
		t.Fatalf("ran %v, want each of 23 shards once", r.shards)
	}
}

// TestShardMessageCountWins: a shard message runs with its own count even
// when the function's configuration now says another.
func TestShardMessageCountWins(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	l := r.loop(nil, 7, 0, func() time.Time { return fixtureTick })
	raw, err := os.ReadFile("../../events/reconciler-shard.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Handle(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if len(r.shards) != 1 || r.shards[0] != (fleetshard.Shard{Index: 3, Count: 10}) {
		t.Fatalf("ran %v, want shard 3/10 of the message", r.shards)
	}
}

// TestStaleAndBadDropped: a message older than one period, or not a shard
// message, succeeds without a pass (no retry: the next tick covers it).
func TestStaleAndBadDropped(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	l := r.loop(nil, 0, 0, func() time.Time { return fixtureTick.Add(time.Minute + time.Second) })
	stale, err := os.ReadFile("../../events/reconciler-shard.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := fanouttest.Event(t, events.SQSMessage{MessageId: "m-bad", Body: `{"op":"create"}`})
	for _, raw := range []json.RawMessage{stale, bad} {
		resp, err := l.Handle(context.Background(), raw)
		if err != nil || len(resp.(events.SQSEventResponse).BatchItemFailures) != 0 {
			t.Fatalf("%v, %v: want success", resp, err)
		}
	}
	if len(r.shards) != 0 {
		t.Fatalf("ran %v, want nothing", r.shards)
	}
}

// TestFailedShardComesBackWithinPeriod: a failed pass fails its record,
// which the queue delivers again after the retry delay, well within the
// period, although the queue's visibility timeout (2 min) is longer.
func TestFailedShardComesBackWithinPeriod(t *testing.T) {
	t.Parallel()
	q := fanouttest.Queue(t)
	r := &recorder{fail: map[int]int{1: 1}}
	tick := time.Now().UTC().Truncate(time.Second)
	l := r.loop(q, 2, 0, nil)
	if _, err := l.Handle(context.Background(), fanouttest.Tick(tick)); err != nil {
		t.Fatal(err)
	}
	recs := fanouttest.Records(t, q, 2, 20*time.Second)
	if len(recs) != 2 {
		t.Fatalf("%d messages, want 2", len(recs))
	}
	failed := 0
	for _, rec := range recs {
		resp, err := l.Handle(context.Background(), fanouttest.Event(t, rec))
		if err != nil {
			t.Fatal(err)
		}
		if f := resp.(events.SQSEventResponse).BatchItemFailures; len(f) == 1 && f[0].ItemIdentifier == rec.MessageId {
			failed++
		}
	}
	if failed != 1 || len(r.shards) != 1 {
		t.Fatalf("%d records failed, %v ran; want shard 1's record failed and shard 0 run", failed, r.shards)
	}
	// The event source deletes the record that succeeded.
	for _, rec := range recs {
		if m, _ := fleetfanout.Decode([]byte(rec.Body)); m.Index == 0 {
			if err := q.Ack(context.Background(), queue.Delivery{MessageID: rec.MessageId, Handle: rec.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	again := fanouttest.Records(t, q, 1, 15*time.Second)
	if len(again) != 1 {
		t.Fatalf("the failed shard's record did not come back within 15 s (%d)", len(again))
	}
	if resp, err := l.Handle(context.Background(), fanouttest.Event(t, again[0])); err != nil || len(resp.(events.SQSEventResponse).BatchItemFailures) != 0 {
		t.Fatalf("retry: %v, %v", resp, err)
	}
	if len(r.shards) != 2 || r.shards[1] != (fleetshard.Shard{Index: 1, Count: 2}) {
		t.Fatalf("ran %v, want shard 1/2 on its retry", r.shards)
	}
}
