package dynamostore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/berth-io/berth/internal/store/storetest"
)

// BenchmarkUsage times a usage query (a team's last 30 days by day) over
// 10,000 instances, run over about 20 days, on DynamoDB Local, beside a
// GetInstance in the same run, 200 of each an iteration
// (storetest.BenchUsage), and counts the read requests (GetItem,
// BatchGetItem, Query, Scan) a query sends. The fill dominates (minutes):
// run it once.
//
//	make bench BENCH=BenchmarkUsage PKGS=./internal/store/dynamostore BENCHTIME=1x
func BenchmarkUsage(b *testing.B) {
	const n = 10_000
	reads := &atomic.Int64{}
	client := testClient(b)
	client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("berthCountReads",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					switch middleware.GetOperationName(ctx) {
					case "GetItem", "BatchGetItem", "Query", "Scan":
						reads.Add(1)
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	})
	clock := &storetest.StepClock{Start: time.Now().Add(-25 * 24 * time.Hour), Step: 50 * time.Second}
	s := New(client, Options{TablePrefix: newTables(b, client, WithoutTTL()), Clock: clock.Now})
	storetest.UsageFill(b, s, n, 16, 4)
	b.Logf("history from %s to %s", clock.Start.Format(time.RFC3339), clock.Now().Format(time.RFC3339))
	ctx := context.Background()
	before := reads.Load()
	queries := 20 * b.N
	for range queries {
		if _, err := s.Usage(ctx, storetest.UsageBenchQuery(clock.Now())); err != nil {
			b.Fatal(err)
		}
	}
	perQuery := float64(reads.Load()-before) / float64(queries)
	storetest.BenchUsage(b, s, clock.Now, n)
	b.ReportMetric(perQuery, "reads/query") // after BenchUsage, whose ResetTimer drops reported metrics
}
