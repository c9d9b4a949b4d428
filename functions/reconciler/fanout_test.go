package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetfanout"
	"github.com/berth-io/berth/internal/fleetfanout/fanouttest"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestTickFansOutToShardPasses: with fleet.shards 2 a Scheduler tick sends
// one message per shard to the shard queue (the SQS emulator) and returns
// what it sent; each record, as the event source hands it to the same
// handler, runs a pass for its shard. With one shard the tick runs the
// pass itself and sends nothing.
func TestTickFansOutToShardPasses(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	rt := dockertest.Engine(t)
	q := fanouttest.Queue(t)
	cfg := config.Default()
	cfg.Docker.Scope = rt.Scope()
	cfg.Fleet.Shards = 2
	logs := &testenv.SyncBuffer{}
	fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, nil, nil, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	whole := fn.shardLoop(config.Default(), q)
	if out, err := whole.Handle(ctx, fanouttest.Tick(time.Now())); err != nil {
		t.Fatal(err)
	} else if _, ok := out.(reconcile.Report); !ok {
		t.Fatalf("a one-shard tick returned %T %+v, want the pass's Report", out, out)
	}
	if recs := fanouttest.Records(t, q, 1, 2*time.Second); len(recs) != 0 {
		t.Fatalf("a one-shard tick sent %d messages", len(recs))
	}

	l := fn.shardLoop(cfg, q)
	out, err := l.Handle(ctx, fanouttest.Tick(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if sent, ok := out.(fleetfanout.Sent); !ok || sent.Shards != 2 || sent.Sent != 2 {
		t.Fatalf("the tick returned %+v, want 2 of 2 shards sent", out)
	}
	recs := fanouttest.Records(t, q, 2, 20*time.Second)
	if len(recs) != 2 {
		t.Fatalf("%d shard messages, want 2", len(recs))
	}
	for _, rec := range recs {
		resp, err := l.Handle(ctx, fanouttest.Event(t, rec))
		if err != nil || len(resp.(events.SQSEventResponse).BatchItemFailures) != 0 {
			t.Fatalf("shard record %s: %+v, %v\n%s", rec.Body, resp, err, logs.String())
		}
	}
	for _, s := range []string{`"shard":"0/2"`, `"shard":"1/2"`} {
		if !strings.Contains(logs.String(), `"msg":"shard pass","loop":"reconcile",`+s) {
			t.Errorf("no pass of shard %s:\n%s", s, logs.String())
		}
	}
}
