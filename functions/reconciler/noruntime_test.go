package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestReconcilerWithoutRuntime: with neither docker.hosts nor
// kubernetes.clusters the reconciler function starts (it used to exit at
// init) and its scheduled pass runs.
func TestReconcilerWithoutRuntime(t *testing.T) {
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("nort%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	for k, v := range map[string]string{
		"BERTH_STORE_TABLE_PREFIX":  prefix,
		"AWS_ENDPOINT_URL_DYNAMODB": testenv.DynamoDBEndpoint(t),
		"AWS_REGION":                "us-east-1",
		"AWS_ACCESS_KEY_ID":         "local",
		"AWS_SECRET_ACCESS_KEY":     "local",
	} {
		t.Setenv(k, v)
	}
	fn, err := setup(ctx, os.LookupEnv, os.Environ(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("the reconciler does not start without a runtime: %v", err)
	}
	if _, err := fn.handle(ctx, events.EventBridgeEvent{ID: "tick"}); err != nil {
		t.Errorf("pass: %v", err)
	}
}
