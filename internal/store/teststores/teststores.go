// Package teststores opens each store backend for tests outside the store
// packages (manager, API, workers), so that every such test runs against
// the embedded store and against DynamoDB Local alike.
package teststores

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/testenv"
)

// Backend opens a fresh, empty store.
type Backend struct {
	Name string
	Open func(t testing.TB, now func() time.Time) store.Store
}

// All lists the backends: the embedded bbolt store and DynamoDB Local.
var All = []Backend{{"bolt", Bolt}, {"dynamodb", Dynamo}}

// Each runs fn once per backend as a subtest.
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	for _, b := range All {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Bolt opens a bbolt store in the test's temporary directory.
func Bolt(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "berth.db"), boltstore.Options{Clock: now})
	if err != nil {
		t.Fatalf("opening bolt store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var prefixSeq atomic.Int64

// DynamoClient returns a client for DynamoDB Local (skipping locally, and
// failing in CI, when it is not running).
func DynamoClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := testenv.DynamoDBEndpoint(t)
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		// DynamoDB Local sends no CRC32 on error replies.
		DisableValidateResponseChecksum: true,
	})
}

// Dynamo creates fresh tables with a unique prefix on DynamoDB Local and
// deletes them when the test ends.
func Dynamo(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	client := DynamoClient(t)
	prefix := fmt.Sprintf("t%d-%d-", time.Now().UnixNano()%1e9, prefixSeq.Add(1))
	ctx := context.Background()
	// No TTL: DynamoDB Local expires by the real clock, while tests move
	// theirs; the store hides expired items by its own clock anyway.
	if err := dynamostore.EnsureTables(ctx, client, prefix, dynamostore.WithoutTTL()); err != nil {
		t.Fatalf("creating tables on DynamoDB Local: %v", err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
	return dynamostore.New(client, dynamostore.Options{TablePrefix: prefix, Clock: now})
}
