package berthstack

import (
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/scheduletick"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// ReconcileScheduleInput is what the schedule invokes the reconciler with (scheduletick.InputTemplate:
// the one Input of every schedule, which the scheduled functions decode).
const ReconcileScheduleInput = scheduletick.InputTemplate

// ReconcilerMaxEventAge is how long Lambda keeps an asynchronous tick it could not run yet
// (throttled): Lambda's floor, one period of the default schedule. An older tick is dropped.
const ReconcilerMaxEventAge = time.Minute

// Reconciler holds the recovery loop: the reconciler function and the schedule that runs it.
// On AWS it is also how a container that exits by itself is noticed: within one schedule
// period plus one pass.
type Reconciler struct {
	constructs.Construct
	Function awslambda.Function
	Schedule awsscheduler.CfnSchedule
	// ShardQueue is where a tick of a fleet of more than one shard sends one message per
	// shard; ShardMapping has the function consume it.
	ShardQueue   awssqs.Queue
	ShardMapping awslambda.CfnEventSourceMapping
}

// reconcilerReserved is the reconciler's reserved concurrency: 1, or none with
// Props.UseReservedConcurrency off or a fleet of more than one shard (loopReserved).
func reconcilerReserved(p Props) int { return loopReserved(p, 1) }

func newReconciler(scope constructs.Construct, p Props, common map[string]*string, tables *Tables, pl *Pipeline) (*Reconciler, error) {
	r := &Reconciler{Construct: constructs.NewConstruct(scope, jsii.String("Reconciler"))}
	r.ShardQueue = newShardQueue(r.Construct, "ReconcileShard", ReconcilerTimeout)
	fn, err := newFunction(r.Construct, p, common, functionSpec{
		id: "ReconcilerFunction", binary: "reconciler",
		description: "berth reconciler (one bounded pass per schedule tick)",
		timeout:     ReconcilerTimeout,
		// One pass at a time: a tick that finds a pass still running is dropped; the next one
		// comes a period later. Without the reservation (or with a pass per shard at once) a
		// long pass may overlap the next one, which reconcile.Reconciler allows.
		reserved: reconcilerReserved(p),
		inVPC:    true,
		env: merge(queueEnv(pl), notifyQueueEnv(pl), runtimeEnv(p), configEnv(p), map[string]*string{
			envOutboxSweepAfter:  jsii.String(strconv.Itoa(p.OutboxSweepAfterSeconds) + "s"),
			envOrphanGrace:       jsii.String(strconv.Itoa(p.OrphanGraceSeconds) + "s"),
			envFleetShards:       jsii.String(strconv.Itoa(p.FleetShards)),
			envReconcileShardURL: r.ShardQueue.QueueUrl(),
		}),
		statements: slices.Concat([]awsiam.PolicyStatement{
			// The sweep lists undispatched outbox items through the outbox's index.
			allow(workerActions, tables.Arns(workerTables, dynamostore.TableInstances, dynamostore.TableOutbox)...),
			// The sweep sends stale outbox items again.
			allow([]string{"sqs:SendMessage"}, pl.Create.Queue.QueueArn(), pl.Lifecycle.Queue.QueueArn(), pl.Notify.Queue.QueueArn()),
			shardQueueStatement(r.ShardQueue),
		}, configStatements(p), secretStatements(p), eksStatements(p)),
	})
	if err != nil {
		return nil, err
	}
	r.Function = fn
	r.ShardMapping = newShardMapping(r.Construct, "ReconcileShard", fn, r.ShardQueue)
	// A failed pass is not retried (ReconcilerScheduleRetries): the next tick runs one anyway.
	r.Schedule = newSchedule(r.Construct, fn, scheduledTick{policy: "invoke-reconciler",
		description: "berth reconcile pass", expression: p.ReconcileSchedule, retries: ReconcilerScheduleRetries})
	return r, nil
}
