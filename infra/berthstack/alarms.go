package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
)

// Alarms holds what tells an operator that work is stuck or lost: messages in a dead-letter
// queue or the stream failure queue, outbox items not dispatched, workers failing.
type Alarms struct {
	constructs.Construct
	All []awscloudwatch.Alarm
}

func newAlarms(scope constructs.Construct, p Props, pl *Pipeline, w *Workers, n *Notify, r *Reconciler) *Alarms {
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
	if p.AlarmTopicARN != "" {
		topic := awssns.Topic_FromTopicArn(a.Construct, jsii.String("Topic"), jsii.String(p.AlarmTopicARN))
		for _, al := range a.All {
			al.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
			al.AddOkAction(awscloudwatchactions.NewSnsAction(topic))
		}
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
