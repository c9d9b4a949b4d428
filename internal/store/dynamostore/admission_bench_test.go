package dynamostore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/berth-io/berth/internal/store/storetest"
)

// BenchmarkAdmission measures creates per second against the admission
// counter on DynamoDB Local at 1, 8 and 32 concurrent clients, with one
// counter item (AdmissionShards 1, as before sharding) and with
// DefaultAdmissionShards, in the same run: the two stores take turns in
// rounds, so noise falls on both alike. Every create is bounded (the
// counter condition is evaluated) but never refused.
//
//	make bench BENCH=Admission PKGS=./internal/store/dynamostore
func BenchmarkAdmission(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			single := newAdmissionBench(b, 1)
			sharded := newAdmissionBench(b, DefaultAdmissionShards)
			round := max(4*clients, 16)
			b.ResetTimer()
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				single.run(b, n, clients)
				sharded.run(b, n, clients)
			}
			b.StopTimer()
			b.ReportMetric(single.rate(), "creates/s-1-shard")
			b.ReportMetric(sharded.rate(), fmt.Sprintf("creates/s-%d-shards", DefaultAdmissionShards))
			b.ReportMetric(sharded.rate()/single.rate(), "sharded/single")
			b.ReportMetric(single.txnsPerCreate(), "txns/create-1-shard")
			b.ReportMetric(sharded.txnsPerCreate(), fmt.Sprintf("txns/create-%d-shards", DefaultAdmissionShards))
		})
	}
}

type admissionBench struct {
	s       *Store
	clock   *storetest.Clock
	txns    *atomic.Int64
	creates int
	elapsed time.Duration
}

// newAdmissionBench is a store with the given shard count on fresh tables,
// counting the TransactWriteItems requests its client sends.
func newAdmissionBench(b *testing.B, shards int) *admissionBench {
	txns := &atomic.Int64{}
	client := testClient(b)
	client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("berthCountTxns",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					if middleware.GetOperationName(ctx) == "TransactWriteItems" {
						txns.Add(1)
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	})
	clock := storetest.NewClock()
	s := New(client, Options{TablePrefix: newTables(b, client, WithoutTTL()), Clock: clock.Now, AdmissionShards: shards})
	return &admissionBench{s: s, clock: clock, txns: txns}
}

// run makes n creates over clients goroutines and adds their time.
func (a *admissionBench) run(b *testing.B, n, clients int) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				p := storetest.NewCreate(a.clock, "bench")
				p.MaxPending = 1 << 30
				if _, err := a.s.CreateInstance(ctx, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	a.elapsed += time.Since(start)
	a.creates += n
}

func (a *admissionBench) rate() float64 { return float64(a.creates) / a.elapsed.Seconds() }

func (a *admissionBench) txnsPerCreate() float64 {
	return float64(a.txns.Load()) / float64(a.creates)
}
