package main

import (
	"context"
	"net/http"
	"slices"
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
// handler's own cost). The dynamodb cases run 1 and 8 concurrent clients
// against DynamoDB Local, as concurrent Lambda instances would, each client
// alternating one API create with a replay of the very transaction that
// create sent (bareTxn), through the same client: the percentiles of both
// and their ratios say what the API adds to the transaction it cannot do
// without, and ddb-calls/create counts every DynamoDB request of a create.
//
//	make bench BENCH=CreateRequest PKGS=./functions/api
func BenchmarkCreateRequest(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		a, ev := benchSetup(b, teststores.Bolt(b, time.Now))
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
		slices.Sort(lat)
		b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
		b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
	})
	for _, bc := range []struct {
		name    string
		clients int
		idemKey bool
	}{
		{"dynamodb/c1", 1, false},
		{"dynamodb/c8", 8, false},
		{"dynamodb/c1-idempotency-key", 1, true},
		{"dynamodb/c8-idempotency-key", 8, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchCreateVsTxn(b, bc.clients, bc.idemKey)
		})
	}
}

// benchSetup puts the fixtures' template on s and returns the handler and
// the create event. The create queue is made large enough that the
// benchmark's creates are never refused.
func benchSetup(b *testing.B, s store.Store) (*lambdahttp.Adapter, events.APIGatewayV2HTTPRequest) {
	b.Helper()
	cfg, err := loadConfig(func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	cfg.Container.CreateQueueMaxPending = 1 << 30
	a := newAdapter(cfg, s, quietLogger(), nil)
	if resp, _ := a.Handle(context.Background(), fixtureEvent(b, "put-template", "")); resp.StatusCode != http.StatusCreated {
		b.Fatalf("put-template: %d %s", resp.StatusCode, resp.Body)
	}
	return a, fixtureEvent(b, "create", "")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
