package berthstack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/config"
)

// Shard queues: a sharded loop's tick sends one message per shard to its loop's queue, which
// the loop's function consumes, one shard per invocation (internal/fleetfanout).
const (
	// ShardQueueRetention is how long a shard message is kept: two periods. It is worth nothing
	// after one (the next tick's covers its shard, and the function drops an older one), so
	// the queue has no dead-letter queue either.
	ShardQueueRetention = 2 * config.DefaultFleetPeriod
	// ShardBatchSize is the shard mappings' batch size: one shard per invocation, so that a
	// failed pass fails its own record alone.
	ShardBatchSize = 1
)

// shardQueueActions are what a loop's function does on its shard queue: the tick sends, the
// mapping consumes with the function's role, and a failed shard's record is made visible
// again soon (ChangeMessageVisibility), within the period.
var shardQueueActions = []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
	"sqs:ChangeMessageVisibility"}

// newShardQueue makes a loop's shard queue (the construct id+"Queue" in scope). Its visibility
// is the function's timeout, AWS's floor for an event source.
func newShardQueue(scope constructs.Construct, id string, timeout time.Duration) awssqs.Queue {
	return awssqs.NewQueue(scope, jsii.String(id+"Queue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: seconds(timeout),
		RetentionPeriod:   seconds(ShardQueueRetention),
	})
}

// shardQueueStatement lets a loop's function use its own shard queue, and no other.
func shardQueueStatement(q awssqs.Queue) awsiam.PolicyStatement {
	return allow(shardQueueActions, q.QueueArn())
}

// newShardMapping has fn consume q (the construct id+"Mapping" in scope), one shard per
// invocation with failures per record, and no maximum concurrency: a tick's shards run at
// once.
func newShardMapping(scope constructs.Construct, id string, fn awslambda.Function, q awssqs.Queue) awslambda.CfnEventSourceMapping {
	return awslambda.NewCfnEventSourceMapping(scope, jsii.String(id+"Mapping"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:          fn.FunctionName(),
		EventSourceArn:        q.QueueArn(),
		BatchSize:             jsii.Number(ShardBatchSize),
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
	})
}

// loopReserved is a loop function's reserved concurrency, reserved only with
// Props.UseReservedConcurrency and a fleet that is one shard for sure (FleetShards 1): a
// fanned-out tick runs its shards at once, which a reservation sized for one would throttle.
func loopReserved(p Props, reserved int) int {
	if p.UseReservedConcurrency && p.FleetShards == 1 {
		return reserved
	}
	return 0
}
