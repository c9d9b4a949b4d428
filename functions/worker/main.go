// Command worker is berth's worker Lambda function, deployed twice: as the
// CreateWorker on the create queue (reserved concurrency =
// create_queue_max_concurrency) and as the LifecycleWorker on the lifecycle
// queue. Each SQS record is one operation (internal/worker); failures are
// reported per record after their visibility is set to the retry backoff,
// and SQS moves a message to the dead-letter queue after maxReceiveCount.
//
// Operations run on the Docker hosts and, when kubernetes.clusters is
// configured, on those Kubernetes clusters too.
//
// Configuration: BERTH_* environment variables (internal/config), plus a
// config.yml document for what only YAML can say (docker.hosts,
// docker.registries, kubernetes.clusters): the Secrets Manager secret named
// by BERTH_CONFIG_SECRET or the file named by BERTH_CONFIG_FILE.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/berth-io/berth/internal/wiring"
)

func main() {
	logger := wiring.Logger()
	slog.SetDefault(logger)
	fn, err := setup(context.Background(), os.LookupEnv, os.Environ(), logger)
	if err != nil {
		logger.Error("worker function cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return fn.handle(ctx, ev), nil
	})
}
