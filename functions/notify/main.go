// Command notify is berth's notify Lambda function: the consumer of the
// notify queue, which carries only deliveries (container.OpDeliver outbox
// items): webhook POSTs and the status changes put on the event bus. It
// exists so that a receiver that is slow, down or answering errors holds
// only this function's invocations, never the lifecycle worker's that
// starts and stops need.
//
// It reaches no runtime: it links no Docker or Kubernetes client and reads
// no runtime secret. Each record is one delivery (internal/worker's
// delivery path); a failed attempt is sent again to the notify queue as a
// fresh delayed message (capped exponential backoff, for the worker's
// DeliveryRetryFor), so retries spend none of the queue's receives; a
// record that is not a delivery is handed back and ends in the notify
// dead-letter queue.
//
// Configuration: BERTH_* environment variables (internal/config):
// BERTH_QUEUE_NOTIFY_QUEUE_URL, the table prefix, BERTH_WEBHOOKS_EVENT_BUS;
// and the configuration document from the parameter named by
// BERTH_CONFIG_PARAMETER (webhooks.allowed_networks).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/lambdamain"
)

func main() {
	lambdamain.Run("notify", setup, func(fn *function) any {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			return fn.handle(ctx, ev), nil
		}
	})
}
