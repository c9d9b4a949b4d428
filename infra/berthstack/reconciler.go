package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Reconciler holds the recovery loop: the reconciler function and the schedule that runs it.
// On AWS it is also how a container that exits by itself is noticed: within one schedule
// period.
type Reconciler struct {
	constructs.Construct
	Function awslambda.Function
	Schedule awsscheduler.Schedule
}

// ReconcilerScheduleRetries is how often the scheduler retries a failed invocation; the next
// tick runs a pass anyway, so retries only shorten a gap.
const ReconcilerScheduleRetries = 2

func newReconciler(scope constructs.Construct, p Props, tables *Tables, pl *Pipeline, rt *RuntimeAccess) (*Reconciler, error) {
	r := &Reconciler{Construct: constructs.NewConstruct(scope, jsii.String("Reconciler"))}
	fn, err := newFunction(r.Construct, p, functionSpec{
		id: "ReconcilerFunction", binary: "reconciler",
		timeout: ReconcilerTimeout, memory: FunctionMemoryMB,
		// One pass at a time: two passes would race on the same stuck instances and orphans.
		reserved: 1,
		inVPC:    true,
		env:      merge(storeEnv(tables), queueEnv(pl), containerEnv(p), rt.env()),
	})
	if err != nil {
		return nil, err
	}
	r.Function = fn
	allowStore(fn, tables)
	// The outbox sweep sends stale items again.
	allowSend(fn, pl.Create.Queue, pl.Lifecycle.Queue)
	rt.allowRead(fn)

	r.Schedule = awsscheduler.NewSchedule(r.Construct, jsii.String("Schedule"), &awsscheduler.ScheduleProps{
		Schedule: awsscheduler.ScheduleExpression_Expression(jsii.String(p.ReconcileSchedule), nil),
		Target: awsschedulertargets.NewLambdaInvoke(fn, &awsschedulertargets.ScheduleTargetBaseProps{
			RetryAttempts: jsii.Number(ReconcilerScheduleRetries),
			MaxEventAge:   seconds(ReconcilerTimeout),
		}),
		Description: jsii.String("berth reconciler: runtimes against instances, stuck statuses, stale outbox items, orphans"),
	})
	return r, nil
}
