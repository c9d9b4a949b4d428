package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// BenchmarkCreateRequest is the function's create path: the create
// fixture through the Lambda handler (adapter, HTTP API, manager, store
// transaction). bolt runs one client (ns/op and allocs/op are the
// handler's own cost); dynamodb runs 8 concurrent clients against
// DynamoDB Local, as concurrent Lambda instances would, and reports the
// latency percentiles of one request.
//
//	make bench BENCH=CreateRequest PKGS=./functions/api
func BenchmarkCreateRequest(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		a, ev := benchSetup(b, teststores.Bolt)
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t0 := time.Now()
			resp, _ := a.Handle(ctx, ev)
			lat = append(lat, time.Since(t0))
			if resp.StatusCode != http.StatusAccepted {
				b.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
			}
		}
		b.StopTimer()
		reportLatency(b, lat)
	})
	b.Run("dynamodb", func(b *testing.B) {
		const clients = 8
		a, ev := benchSetup(b, teststores.Dynamo)
		ctx := context.Background()
		lat := make([]time.Duration, b.N)
		var next atomic.Int64
		var failures atomic.Int64
		var firstFailure atomic.Value
		var wg sync.WaitGroup
		b.ReportAllocs()
		b.ResetTimer()
		for range clients {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(b.N) {
						return
					}
					t0 := time.Now()
					resp, _ := a.Handle(ctx, ev)
					lat[i] = time.Since(t0)
					if resp.StatusCode != http.StatusAccepted {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, resp.Body))
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		if n := failures.Load(); n > 0 {
			b.Fatalf("%d of %d creates failed; first: %v", n, b.N, firstFailure.Load())
		}
		reportLatency(b, lat)
	})
}

// benchSetup opens a store, puts the fixtures' template and returns the
// handler and the create event. The create queue is made large enough
// that the benchmark's creates are never refused.
func benchSetup(b *testing.B, open func(testing.TB, func() time.Time) store.Store) (*lambdahttp.Adapter, events.APIGatewayV2HTTPRequest) {
	b.Helper()
	cfg, err := loadConfig(func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	cfg.Container.CreateQueueMaxPending = 1 << 30
	a := newAdapter(cfg, open(b, time.Now), quietLogger(), nil)
	if resp, _ := a.Handle(context.Background(), fixtureEvent(b, "put-template", "")); resp.StatusCode != http.StatusCreated {
		b.Fatalf("put-template: %d %s", resp.StatusCode, resp.Body)
	}
	return a, fixtureEvent(b, "create", "")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(pct(lat, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 99).Microseconds())/1000, "p99-ms")
}
