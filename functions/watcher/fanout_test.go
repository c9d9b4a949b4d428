package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetfanout/fanouttest"
)

// TestShardRecordHoldsAWatch: with fleet.shards 2 a Scheduler tick sends
// one message per shard to the shard queue (the SQS emulator) and returns
// at once; a record, as the event source hands it to the same handler,
// holds its shard's watch until shortly before the deadline, and an exit
// on the engine, a node of that shard's, within it reaches the state loop.
func TestShardRecordHoldsAWatch(t *testing.T) {
	r := newRig(t)
	q := fanouttest.Queue(t)
	cfg := config.Default()
	cfg.Fleet.Shards = 2
	l := r.fn.shardLoop(cfg, q)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ref := r.running(ctx)

	start := time.Now()
	out, err := l.Handle(ctx, fanouttest.Tick(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if sent, ok := out.(fleetfanout.Sent); !ok || sent.Shards != 2 || sent.Sent != 2 || time.Since(start) > 10*time.Second {
		t.Fatalf("the tick returned %+v after %s, want 2 of 2 shards sent at once", out, time.Since(start))
	}
	recs := fanouttest.Records(t, q, 2, 20*time.Second)
	if len(recs) != 2 {
		t.Fatalf("%d shard messages, want 2", len(recs))
	}
	// The record of the shard that owns the engine's node.
	var rec events.SQSMessage
	for _, r := range recs {
		if m, err := fleetfanout.Decode([]byte(r.Body)); err == nil && m.OwnsNode(container.RuntimeDocker, "local") {
			rec = r
		}
	}
	// The shard invocation's deadline: the watch ends deadlineMargin before.
	wctx, wcancel := context.WithTimeout(ctx, 8*time.Second)
	defer wcancel()
	done := make(chan events.SQSEventResponse, 1)
	go func() {
		resp, err := l.Handle(wctx, fanouttest.Event(t, rec))
		if err != nil {
			t.Error(err)
		}
		done <- resp.(events.SQSEventResponse)
	}()
	r.kill(ctx, ref)
	select {
	case ob := <-r.seen:
		t.Logf("observed %+v", ob)
	case <-wctx.Done():
		t.Fatalf("the shard's watch did not hear the exit:\n%s", r.logs.String())
	}
	if resp := <-done; len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the shard's record failed: %+v", resp)
	}
	if !strings.Contains(r.logs.String(), `"msg":"shard pass","loop":"watch"`) {
		t.Errorf("the shard's watch is not reported:\n%s", r.logs.String())
	}
}
