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

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/lambdamain"
)

func main() {
	lambdamain.Run("worker", setup, func(fn *function) any {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			return fn.handle(ctx, ev), nil
		}
	})
}
