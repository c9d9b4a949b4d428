package dynamostore

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
)

// openStore is the conformance suite's factory: a Store on fresh tables of
// DynamoDB Local, reading time from now. TTL stays off: the suite's clock
// starts at a fixed date that may be weeks behind the real one, and DynamoDB
// Local would expire, by the real clock, items the suite still reads.
func openStore(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	client := testClient(t)
	return New(client, Options{TablePrefix: newTables(t, client, WithoutTTL()), Clock: now})
}

func TestConformance(t *testing.T) {
	storetest.Run(t, openStore)
}

// BenchmarkStore runs the suite's create and transition benchmarks against
// DynamoDB Local (go test -run '^$' -bench . with AWS_ENDPOINT_URL_DYNAMODB
// set).
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, openStore)
}
