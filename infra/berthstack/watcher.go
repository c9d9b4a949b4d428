package berthstack

import (
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
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
}

func newWatcher(scope constructs.Construct, p Props, common map[string]*string, tables *Tables) (*Watcher, error) {
	w := &Watcher{Construct: constructs.NewConstruct(scope, jsii.String("Watcher"))}
	reserved := 0
	if p.UseReservedConcurrency {
		reserved = WatcherReserved
	}
	fn, err := newFunction(w.Construct, p, common, functionSpec{
		id: "WatcherFunction", binary: "watcher",
		description: "berth watcher (the runtimes' events to the state loop, one period plus an overlap per tick)",
		timeout:     WatcherTimeout,
		reserved:    reserved,
		memoryMB:    WatcherMemoryMB,
		inVPC:       true,
		env:         merge(runtimeEnv(p), configEnv(p)),
		statements: slices.Concat([]awsiam.PolicyStatement{
			// What the state loop writes: the instance's transition with its event, a group
			// member's cleanup (outbox), its admission slot.
			allow(workerActions, tables.Arns(workerTables, dynamostore.TableInstances, dynamostore.TableOutbox)...),
		}, configStatements(p), secretStatements(p), eksStatements(p)),
	})
	if err != nil {
		return nil, err
	}
	w.Function = fn
	// A failed or throttled tick is not kept: the next one comes a period later.
	fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(ReconcilerMaxEventAge.Seconds())),
	})
	role := awsiam.NewRole(w.Construct, jsii.String("ScheduleRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()}},
		}),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"invoke-watcher": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{
				Statements: &[]awsiam.PolicyStatement{allow([]string{"lambda:InvokeFunction"}, fn.FunctionArn())},
			}),
		},
	})
	w.Schedule = awsscheduler.NewCfnSchedule(w.Construct, jsii.String("Schedule"), &awsscheduler.CfnScheduleProps{
		Description:        jsii.String("berth watcher (one watch per tick, overlapping the last)"),
		ScheduleExpression: jsii.String(WatcherSchedule),
		FlexibleTimeWindow: &awsscheduler.CfnSchedule_FlexibleTimeWindowProperty{Mode: jsii.String("OFF")},
		Target: &awsscheduler.CfnSchedule_TargetProperty{
			Arn:         fn.FunctionArn(),
			RoleArn:     role.RoleArn(),
			RetryPolicy: &awsscheduler.CfnSchedule_RetryPolicyProperty{MaximumRetryAttempts: jsii.Number(0)},
			Input:       jsii.String(ReconcileScheduleInput),
		},
	})
	return w, nil
}
