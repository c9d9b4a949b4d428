// Command reconciler is berth's reconciler Lambda function: on each
// schedule tick (EventBridge Scheduler's input, or an EventBridge rule's
// scheduled event) it makes one bounded reconcile pass
// (internal/reconcile) over the DynamoDB store, the Docker hosts and the
// Kubernetes clusters (whichever are configured), and returns the pass's
// Report as its result. A fleet of more than one shard
// (internal/fleetshard; fleet.shards, or one per 100 nodes) is fanned out
// instead: the tick sends one message per shard to the shard queue
// (fleet.reconcile_shard_queue_url), which the function consumes too, one
// shard's pass per record (internal/fleetfanout).
//
// Configuration: BERTH_* environment variables (internal/config; the store
// is always dynamodb, BERTH_STORE_TABLE_PREFIX names the tables), plus a
// config.yml document for what only YAML can say (docker.hosts,
// kubernetes.clusters): the Secrets Manager secret named by
// BERTH_CONFIG_SECRET or the file named by BERTH_CONFIG_FILE.
// With both queue URLs set (BERTH_QUEUE_CREATE_QUEUE_URL,
// BERTH_QUEUE_LIFECYCLE_QUEUE_URL) the pass also sweeps stale outbox items
// onto the queues; without them that step is skipped and said so at start.
package main

import "github.com/berth-io/berth/internal/lambdamain"

func main() {
	lambdamain.Run("reconciler", setup, func(fn *function) any { return fn.fanout.Handle })
}
