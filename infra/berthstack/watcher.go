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

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Watcher settings: the schedule and the timeout go together. Each invocation watches until
// shortly before its deadline, so with a timeout longer than the period two invocations
// overlap (by about 28 s) and the runtimes' event streams never stop.
const (
	// WatcherSchedule starts a watch every minute.
	WatcherSchedule = "rate(1 minute)"
	// WatcherTimeout is one period plus the overlap: how long each invocation watches.
	WatcherTimeout = 90 * time.Second
	// WatcherReserved: the invocation ending and the one beginning.
	WatcherReserved = 2
	// WatcherMemoryMB: it holds streams and a Pod cache per cluster, and is always running, so
	// it gets Lambda's smallest size (docs/cost.md).
	WatcherMemoryMB = 128
)

// Watcher holds the state loop's intake on AWS: the watcher function and the schedule that
// keeps one running.
type Watcher struct {
	constructs.Construct
	Function awslambda.Function
	Schedule awsscheduler.CfnSchedule
	// ShardQueue is where a tick of a fleet of more than one shard sends one message per
	// shard; ShardMapping has the function consume it.
	ShardQueue   awssqs.Queue
	ShardMapping awslambda.CfnEventSourceMapping
}

func newWatcher(scope constructs.Construct, p Props, common map[string]*string, tables *Tables) (*Watcher, error) {
	w := &Watcher{Construct: constructs.NewConstruct(scope, jsii.String("Watcher"))}
	// Per shard with a fleet of more than one: none reserved then (loopReserved).
	reserved := loopReserved(p, WatcherReserved)
	w.ShardQueue = newShardQueue(w.Construct, "WatchShard", WatcherTimeout)
	fn, err := newFunction(w.Construct, p, common, functionSpec{
		id: "WatcherFunction", binary: "watcher",
		description: "berth watcher (the runtimes' events to the state loop, one period plus an overlap per tick)",
		timeout:     WatcherTimeout,
		reserved:    reserved,
		memoryMB:    WatcherMemoryMB,
		inVPC:       true,
		env: merge(runtimeEnv(p), configEnv(p), map[string]*string{
			envFleetShards:   jsii.String(strconv.Itoa(p.FleetShards)),
			envWatchShardURL: w.ShardQueue.QueueUrl(),
		}),
		statements: slices.Concat([]awsiam.PolicyStatement{
			// What the state loop writes: the instance's transition with its event, a group
			// member's cleanup (outbox), its admission slot.
			allow(workerActions, tables.Arns(workerTables, dynamostore.TableInstances, dynamostore.TableOutbox)...),
			shardQueueStatement(w.ShardQueue),
		}, configStatements(p), secretStatements(p), eksStatements(p)),
	})
	if err != nil {
		return nil, err
	}
	w.Function = fn
	w.ShardMapping = newShardMapping(w.Construct, "WatchShard", fn, w.ShardQueue)
	w.Schedule = newSchedule(w.Construct, fn, scheduledTick{policy: "invoke-watcher",
		description: "berth watcher (one watch per tick, overlapping the last)", expression: WatcherSchedule})
	return w, nil
}
