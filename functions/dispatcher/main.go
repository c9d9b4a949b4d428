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
	"github.com/berth-io/berth/internal/lambdamain"
	"github.com/berth-io/berth/internal/lambdastream"
)

func main() {
	lambdamain.Run("dispatcher", setup, func(h *lambdastream.Handler) any { return h.Handle })
}
