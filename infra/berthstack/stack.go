// Package berthstack is berth's AWS stack as CDK constructs: the same resources and settings as
// template.yaml, for teams that deploy with the CDK. Each construct is named for what it holds:
// Api (the HTTP API, its authorizer and the api function), Tables, Pipeline (the outbox stream's
// dispatcher and the queues), Workers, Notify (the deliveries' consumer), Reconciler (with its schedule), Watcher (with
// its schedule), Alarms (with the topic they notify), Backup (the tables' backup plan, opt-in) and Dashboard.
package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Stack is berth's stack and its parts.
type Stack struct {
	awscdk.Stack
	API      *API
	Tables   *Tables
	Pipeline *Pipeline
	Workers  *Workers
	// Notify delivers webhooks and puts status changes on the event bus.
	Notify     *Notify
	Reconciler *Reconciler
	// Watcher is nil with Props.RuntimeWatcher off.
	Watcher *Watcher
	// Logs serves GET /api/containers/{id}/logs.
	Logs *Logs
	// Exec serves POST /api/containers/{id}/exec.
	Exec   *Exec
	Alarms *Alarms
	// Backup is nil with Props.BackupPlan off.
	Backup *Backup
	// Dashboard is the CloudWatch dashboard of the whole pipeline.
	Dashboard *Dashboard
	// LogsKey is the log groups' key the stack made (Props.CreateLogsKmsKey); nil otherwise.
	LogsKey awskms.CfnKey
}

// New builds the stack in scope. It fails on invalid props or when a function's binary is
// missing from p.DistDir.
func New(scope constructs.Construct, id string, stackProps *awscdk.StackProps, p Props) (*Stack, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if stackProps == nil {
		stackProps = &awscdk.StackProps{}
	}
	if stackProps.Description == nil {
		stackProps.Description = jsii.String("berth: container lifecycles on Lambda, DynamoDB and SQS")
	}
	s := &Stack{Stack: awscdk.NewStack(scope, jsii.String(id), stackProps)}
	p.net = newDeploymentNet(s.Stack, p)
	p.logsKey, s.LogsKey = newLogsKey(s.Stack, p)
	common := commonEnv(p)
	s.Tables = newTables(s.Stack, p)
	if p.BackupPlan {
		s.Backup = newBackup(s.Stack, p, s.Tables)
	}
	var err error
	if s.API, err = newAPI(s.Stack, p, common, s.Tables); err != nil {
		return nil, err
	}
	if s.Logs, err = newLogs(s.Stack, p, common, s.Tables, s.API); err != nil {
		return nil, err
	}
	if s.Exec, err = newExec(s.Stack, p, common, s.Tables, s.API); err != nil {
		return nil, err
	}
	s.Pipeline = newQueues(s.Stack, p)
	if err := s.Pipeline.addDispatcher(p, common, s.Tables); err != nil {
		return nil, err
	}
	if s.Workers, err = newWorkers(s.Stack, p, common, s.Tables, s.Pipeline); err != nil {
		return nil, err
	}
	if s.Notify, err = newNotify(s.Stack, p, common, s.Tables, s.Pipeline); err != nil {
		return nil, err
	}
	if s.Reconciler, err = newReconciler(s.Stack, p, common, s.Tables, s.Pipeline); err != nil {
		return nil, err
	}
	if p.RuntimeWatcher {
		if s.Watcher, err = newWatcher(s.Stack, p, common, s.Tables); err != nil {
			return nil, err
		}
	}
	s.Alarms = newAlarms(s.Stack, p, s.Pipeline, s.Workers, s.Notify, s.Reconciler, s.Watcher)
	s.Dashboard = newDashboard(s)
	s.outputs()
	return s, nil
}

// outputs are what a user needs after a deploy: template.yaml's Outputs, by the same names.
func (s *Stack) outputs() {
	out := func(name, description string, value *string) {
		props := &awscdk.CfnOutputProps{Value: value}
		if description != "" {
			props.Description = jsii.String(description)
		}
		awscdk.NewCfnOutput(s.Stack, jsii.String(name), props)
	}
	out("ApiUrl", "BERTH_URL for the CLI", s.API.HTTPAPI.ApiEndpoint())
	out("ConsoleUrl", "The web console (sign in with the stack's identity provider)", s.API.ConsoleURL())
	if s.API.UserPool != nil {
		out("UserPoolId", "Cognito user pool (add users here; the admin group is AdminGroup)", s.API.UserPool.Ref())
		out("UserPoolClientId", "App client for `aws cognito-idp initiate-auth`", s.API.UserPoolClient.Ref())
	}
	out("CreateQueueUrl", "", s.Pipeline.Create.Queue.QueueUrl())
	out("LifecycleQueueUrl", "", s.Pipeline.Lifecycle.Queue.QueueUrl())
	out("CreateDeadLetterQueueUrl", "", s.Pipeline.Create.DeadLetter.QueueUrl())
	out("LifecycleDeadLetterQueueUrl", "", s.Pipeline.Lifecycle.DeadLetter.QueueUrl())
	out("NotifyQueueUrl", "", s.Pipeline.Notify.Queue.QueueUrl())
	out("NotifyDeadLetterQueueUrl", "", s.Pipeline.Notify.DeadLetter.QueueUrl())
	out("StreamFailureQueueUrl", "", s.Pipeline.StreamFailure.QueueUrl())
	out("DashboardUrl", "The CloudWatch dashboard of the pipeline, for the person on call", s.Dashboard.URL())
	out("AlarmNotificationsTopicArn", "The topic every alarm notifies (subscribe to it: docs/deploy.md, Alarms)", s.Alarms.Topic.TopicArn())
}
