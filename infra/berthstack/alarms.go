package berthstack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Alarms holds what tells an operator that work is stuck or lost: a message in a dead-letter
// queue, outbox items not dispatched, workers failing.
type Alarms struct {
	constructs.Construct
	All []awscloudwatch.Alarm
}

// Alarm thresholds.
const (
	// AlarmPeriod is the period of every alarm's metric.
	AlarmPeriod = time.Minute
	// OutboxAgeThreshold is how far behind the outbox stream the dispatcher may fall before an
	// alarm: past it, creates wait on the pipeline rather than on their runtime. The
	// reconciler's sweep re-sends items older than outbox_sweep_after, so a stuck stream is
	// survived, but not silently.
	OutboxAgeThreshold = 5 * time.Minute
	// WorkerErrorPeriods is how many consecutive minutes with failed worker invocations raise
	// an alarm (a worker reports a failed operation as a batch item failure, not an error, so
	// errors mean crashes or timeouts).
	WorkerErrorPeriods = 3
)

func newAlarms(scope constructs.Construct, p Props, pl *Pipeline, w *Workers, r *Reconciler) *Alarms {
	a := &Alarms{Construct: constructs.NewConstruct(scope, jsii.String("Alarms"))}
	for _, dl := range []struct {
		id string
		q  awssqs.Queue
	}{
		{"CreateDeadLetters", pl.Create.DeadLetter},
		{"LifecycleDeadLetters", pl.Lifecycle.DeadLetter},
		{"DispatchFailures", pl.DispatchFailure},
	} {
		a.add(dl.id, "a message is in "+dl.id+": an operation gave up; its instance says why", dl.q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: seconds(AlarmPeriod), Statistic: jsii.String("Maximum"),
		}), 0, 1)
	}
	a.add("OutboxAge", "the dispatcher is behind the outbox stream", pl.Dispatcher.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Period: seconds(AlarmPeriod), Statistic: jsii.String("Maximum"),
	}), float64(OutboxAgeThreshold.Milliseconds()), 1)
	for _, fn := range []struct {
		id string
		f  awslambda.Function
	}{{"CreateWorkerErrors", w.Create}, {"LifecycleWorkerErrors", w.Lifecycle}, {"ReconcilerErrors", r.Function}, {"DispatcherErrors", pl.Dispatcher}} {
		a.add(fn.id, fn.id+": invocations failing", fn.f.MetricErrors(&awscloudwatch.MetricOptions{
			Period: seconds(AlarmPeriod), Statistic: jsii.String("Sum"),
		}), 0, WorkerErrorPeriods)
	}
	if p.AlarmTopicARN != "" {
		topic := awssns.Topic_FromTopicArn(a.Construct, jsii.String("Topic"), jsii.String(p.AlarmTopicARN))
		for _, al := range a.All {
			al.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
			al.AddOkAction(awscloudwatchactions.NewSnsAction(topic))
		}
	}
	return a
}

// add makes an alarm that fires when metric exceeds threshold for periods periods; missing
// data (an idle queue, no invocations) is not a breach.
func (a *Alarms) add(id, description string, metric awscloudwatch.Metric, threshold float64, periods int) {
	a.All = append(a.All, metric.CreateAlarm(a.Construct, jsii.String(id), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(periods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	}))
}
