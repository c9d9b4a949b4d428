package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// scheduledTick says how an EventBridge Scheduler schedule invokes a function (newSchedule).
type scheduledTick struct {
	// policy names the schedule role's inline policy ("invoke-reconciler").
	policy string
	// description and expression are the schedule's.
	description, expression string
	// retries is the schedule's MaximumRetryAttempts.
	retries int
}

// newSchedule runs fn on a schedule (the constructs "ScheduleRole" and "Schedule" in scope): a
// tick is one asynchronous invocation with ReconcileScheduleInput, its context attributes filled
// in. Lambda keeps no failed or throttled tick (no retries, none older than
// ReconcilerMaxEventAge): the next one comes a period later. The schedule's role may invoke fn
// alone, and only this account's schedules may assume it.
func newSchedule(scope constructs.Construct, fn awslambda.Function, tick scheduledTick) awsscheduler.CfnSchedule {
	fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(ReconcilerMaxEventAge.Seconds())),
	})
	role := awsiam.NewRole(scope, jsii.String("ScheduleRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()}},
		}),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			tick.policy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{
				Statements: &[]awsiam.PolicyStatement{allow([]string{"lambda:InvokeFunction"}, fn.FunctionArn())},
			}),
		},
	})
	return awsscheduler.NewCfnSchedule(scope, jsii.String("Schedule"), &awsscheduler.CfnScheduleProps{
		Description:        jsii.String(tick.description),
		ScheduleExpression: jsii.String(tick.expression),
		FlexibleTimeWindow: &awsscheduler.CfnSchedule_FlexibleTimeWindowProperty{Mode: jsii.String("OFF")},
		Target: &awsscheduler.CfnSchedule_TargetProperty{
			Arn:         fn.FunctionArn(),
			RoleArn:     role.RoleArn(),
			RetryPolicy: &awsscheduler.CfnSchedule_RetryPolicyProperty{MaximumRetryAttempts: jsii.Number(tick.retries)},
			Input:       jsii.String(ReconcileScheduleInput),
		},
	})
}
