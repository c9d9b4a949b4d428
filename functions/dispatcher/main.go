// Command dispatcher is berth's dispatcher Lambda function: batches of the
// outbox table's DynamoDB Streams records in, one SQS message per outbox
// INSERT out (creates to the create queue, start/stop/delete to the
// lifecycle queue), partial batch failures reported back (internal/lambdastream's
// Handler).
//
// Configuration comes from the environment only (BERTH_* variables, see
// internal/config): BERTH_STORE_TABLE_PREFIX names the tables,
// BERTH_QUEUE_CREATE_QUEUE_URL and BERTH_QUEUE_LIFECYCLE_QUEUE_URL the
// queues. Clients are built once per Lambda container, before the first
// event. The Docker and Kubernetes clients are not linked in (deps_test.go).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/berth-io/berth/internal/wiring"
)

func main() {
	logger := wiring.Logger()
	slog.SetDefault(logger)
	h, err := setup(context.Background(), os.LookupEnv, os.Environ(), logger)
	if err != nil {
		logger.Error("dispatcher function cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
