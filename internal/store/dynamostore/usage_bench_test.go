package dynamostore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/berth-io/berth/internal/store/storetest"
)

// usageBench is the benchmark's store, filled once for every b.N the
// benchmark is run with, and the read requests its client sent.
var usageBench struct {
	once  sync.Once
	s     *Store
	clock *storetest.StepClock
	reads *atomic.Int64
}

// BenchmarkUsage times a usage query (a team's last 30 days by day) over
// 10,000 instances, run over about 23 days, on DynamoDB Local, beside a
// GetInstance in the same run (storetest.BenchUsage), and counts the
// read requests (GetItem, BatchGetItem, Query, Scan) a query sends.
//
//	make bench BENCH=BenchmarkUsage PKGS=./internal/store/dynamostore BENCHTIME=200x
func BenchmarkUsage(b *testing.B) {
	const n = 10_000
	u := &usageBench
	u.once.Do(func() {
		u.reads = &atomic.Int64{}
		client := testClient(b)
		client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
				return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("berthCountReads",
					func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
						switch middleware.GetOperationName(ctx) {
						case "GetItem", "BatchGetItem", "Query", "Scan":
							u.reads.Add(1)
						}
						return next.HandleFinalize(ctx, in)
					}), middleware.After)
			})
		})
		u.clock = &storetest.StepClock{Start: time.Now().Add(-25 * 24 * time.Hour), Step: 50 * time.Second}
		u.s = New(client, Options{TablePrefix: newTables(b, client, WithoutTTL()), Clock: u.clock.Now})
		storetest.UsageFill(b, u.s, n, 16, 4)
		b.Logf("history from %s to %s", u.clock.Start.Format(time.RFC3339), u.clock.Now().Format(time.RFC3339))
	})
	ctx := context.Background()
	before := u.reads.Load()
	for range b.N {
		if _, err := u.s.Usage(ctx, storetest.UsageBenchQuery(u.clock.Now())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(u.reads.Load()-before)/float64(b.N), "reads/query")
	storetest.BenchUsage(b, u.s, u.clock.Now, n)
}
