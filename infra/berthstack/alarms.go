package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
)

// Alarms holds what tells an operator that work is stuck or lost: messages in a dead-letter
// queue or the stream failure queue, outbox items not dispatched, functions failing; and the
// topic every alarm notifies, on alarm and on recovery.
type Alarms struct {
	constructs.Construct
	All []awscloudwatch.Alarm
	// Topic is what every alarm notifies: Props.AlarmTopicARN's topic, or OwnTopic.
	Topic awssns.ITopic
	// OwnTopic, its policy and its key are the stack's own topic, made when
	// Props.AlarmTopicARN is empty; nil otherwise.
	OwnTopic    awssns.CfnTopic
	TopicPolicy awssns.CfnTopicPolicy
	TopicKey    awskms.CfnKey
}

func newAlarms(scope constructs.Construct, p Props, pl *Pipeline, w *Workers, n *Notify, r *Reconciler, wa *Watcher) *Alarms {
	a := &Alarms{Construct: constructs.NewConstruct(scope, jsii.String("Alarms"))}
	stat := func(s string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: seconds(AlarmPeriod), Statistic: jsii.String(s)}
	}
	notBreaching := awscloudwatch.TreatMissingData_NOT_BREACHING
	a.add("CreateDeadLetters", "Create messages reached the dead-letter queue (their instances failed after max_attempts).",
		pl.Create.DeadLetter.MetricApproximateNumberOfMessagesVisible(stat("Maximum")), 0, notBreaching)
	a.add("LifecycleDeadLetters", "Start/stop/delete messages reached the dead-letter queue.",
		pl.Lifecycle.DeadLetter.MetricApproximateNumberOfMessagesVisible(stat("Maximum")), 0, notBreaching)
	a.add("NotifyDeadLetters", "Delivery messages reached the dead-letter queue (the notify function crashed or timed out on them, or they were not deliveries).",
		pl.Notify.DeadLetter.MetricApproximateNumberOfMessagesVisible(stat("Maximum")), 0, notBreaching)
	a.add("StreamFailures", "The outbox stream mapping gave up on records (the reconciler's sweep sends their items).",
		pl.StreamFailure.MetricApproximateNumberOfMessagesVisible(stat("Maximum")), 0, notBreaching)
	// Every reconcile pass measures it (namespace berth, dimension Function); no data means no
	// pass ran, which is an alarm too.
	a.add("OutboxNotDraining", "The oldest undispatched outbox item is older than 5 minutes.",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String(metrics.Namespace),
			MetricName:    jsii.String(outbox.MetricOldestPendingAge),
			DimensionsMap: &map[string]*string{"Function": r.Function.FunctionName()},
			Period:        seconds(AlarmPeriod), Statistic: jsii.String("Maximum"),
		}), OutboxAgeThreshold.Seconds(), awscloudwatch.TreatMissingData_BREACHING)
	a.add("CreateWorkerErrors", "CreateWorker invocations failed (crash, timeout, start-up error), not per-record retries.",
		w.Create.MetricErrors(stat("Sum")), 0, notBreaching)
	a.add("LifecycleWorkerErrors", "LifecycleWorker invocations failed (crash, timeout, start-up error).",
		w.Lifecycle.MetricErrors(stat("Sum")), 0, notBreaching)
	a.add("NotifyErrors", "Notify invocations failed (crash, timeout, start-up error), not per-delivery retries.",
		n.Function.MetricErrors(stat("Sum")), 0, notBreaching)
	a.addRunErrors("ReconcilerErrors", "Reconcile passes failed as a whole (crash, timeout, start-up error) in 2 of the last 3 periods: "+
		"one failed pass is tolerated, the next tick runs another.", r.Function)
	if wa != nil {
		a.addRunErrors("WatcherErrors", "Watcher invocations failed (crash, timeout, start-up error) in 2 of the last 3 periods: "+
			"exits are then noticed at the reconciler's pace only.", wa.Function)
	}
	a.Topic = a.topic(p)
	for _, al := range a.All {
		al.AddAlarmAction(awscloudwatchactions.NewSnsAction(a.Topic))
		al.AddOkAction(awscloudwatchactions.NewSnsAction(a.Topic))
	}
	return a
}

// add makes an alarm that fires when one period's value exceeds threshold.
func (a *Alarms) add(id, description string, metric awscloudwatch.IMetric, threshold float64, missing awscloudwatch.TreatMissingData) {
	a.All = append(a.All, awscloudwatch.NewAlarm(a.Construct, jsii.String(id+"Alarm"), &awscloudwatch.AlarmProps{
		Metric:             metric,
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   missing,
	}))
}

// addRunErrors makes the alarm of a scheduled function: it fires when invocations failed in
// RunErrorsDatapoints of the last RunErrorsEvaluationPeriods periods, so that one failed run
// (the next tick runs another) does not page anyone.
func (a *Alarms) addRunErrors(id, description string, fn awslambda.Function) {
	a.All = append(a.All, awscloudwatch.NewAlarm(a.Construct, jsii.String(id+"Alarm"), &awscloudwatch.AlarmProps{
		Metric: fn.MetricErrors(&awscloudwatch.MetricOptions{
			Period: seconds(AlarmPeriod), Statistic: jsii.String("Sum"),
		}),
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(RunErrorsEvaluationPeriods),
		DatapointsToAlarm:  jsii.Number(RunErrorsDatapoints),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	}))
}

// topic is the topic the alarms notify: the one p names, or one the stack makes, encrypted
// with a key of its own (SNS's AWS-managed key does not let CloudWatch publish), which only
// accepts TLS publishers.
func (a *Alarms) topic(p Props) awssns.ITopic {
	if p.AlarmTopicARN != "" {
		return awssns.Topic_FromTopicArn(a.Construct, jsii.String("Topic"), jsii.String(p.AlarmTopicARN))
	}
	a.TopicKey = awskms.NewCfnKey(a.Construct, jsii.String("AlarmTopicKey"), &awskms.CfnKeyProps{
		Description:       jsii.String("berth alarm topic: CloudWatch alarms publish encrypted notifications"),
		EnableKeyRotation: jsii.Bool(true),
		KeyPolicy: serviceKeyPolicy("CloudWatchAlarms", jsii.String("cloudwatch.amazonaws.com"),
			[]string{"kms:Decrypt", "kms:GenerateDataKey*"}, nil),
	})
	a.OwnTopic = awssns.NewCfnTopic(a.Construct, jsii.String("AlarmTopic"), &awssns.CfnTopicProps{
		KmsMasterKeyId: a.TopicKey.Ref(),
	})
	a.TopicPolicy = awssns.NewCfnTopicPolicy(a.Construct, jsii.String("AlarmTopicPolicy"), &awssns.CfnTopicPolicyProps{
		Topics: &[]*string{a.OwnTopic.Ref()},
		PolicyDocument: map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{
				map[string]any{
					"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "sns:Publish",
					"Resource":  a.OwnTopic.Ref(),
					"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				},
				map[string]any{
					"Sid": "CloudWatchAlarms", "Effect": "Allow",
					"Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
					"Action":    "sns:Publish", "Resource": a.OwnTopic.Ref(),
					"Condition": map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()}},
				},
			},
		},
	})
	return awssns.Topic_FromTopicArn(a.Construct, jsii.String("Topic"), a.OwnTopic.Ref())
}

// serviceKeyPolicy is the policy of a key the stack makes for one AWS service: the account
// administers it (IAM policies decide who), and the service (with an optional condition) may
// use it for actions, nothing more.
func serviceKeyPolicy(sid string, service *string, actions []string, condition map[string]any) map[string]any {
	use := map[string]any{
		"Sid": sid, "Effect": "Allow",
		"Principal": map[string]any{"Service": service},
		"Action":    actions,
		"Resource":  "*",
	}
	if condition != nil {
		use["Condition"] = condition
	}
	return map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{
			map[string]any{
				"Sid": "Account", "Effect": "Allow",
				"Principal": map[string]any{"AWS": jsii.String("arn:" + *awscdk.Aws_PARTITION() + ":iam::" + *awscdk.Aws_ACCOUNT_ID() + ":root")},
				"Action":    "kms:*", "Resource": "*",
			},
			use,
		},
	}
}
