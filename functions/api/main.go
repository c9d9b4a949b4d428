// Command api is berth's API Lambda function: API Gateway HTTP API events
// (payload 2.0, JWT authorizer) served by internal/httpapi through
// internal/lambdahttp, on the DynamoDB store.
//
// Configuration comes from the environment only (BERTH_* variables, see
// internal/config; BERTH_STORE_TABLE_PREFIX names the tables). Clients are
// built once per Lambda container, before the first event. The Docker and
// Kubernetes clients are not linked in (deps_test.go).
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
	adapter, err := setup(context.Background(), os.LookupEnv, os.Environ(), logger)
	if err != nil {
		logger.Error("api function cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(adapter.HandleEvent)
}
