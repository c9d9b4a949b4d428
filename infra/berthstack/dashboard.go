package berthstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
)

// Dashboard is the stack's CloudWatch dashboard: the pipeline from request to running for the
// person on call, drawn from AWS's metrics of the stack's resources and the EMF metrics berth's
// functions emit (namespace metrics.Namespace; TestDashboardMetricsAreEmitted holds every one
// it draws to a call in the code).
type Dashboard struct {
	constructs.Construct
	Resource awscloudwatch.CfnDashboard
}

// DashboardVariables are the names the dashboard's body refers to as ${Name}: template.yaml's
// Dashboard gives them with Fn::Sub's variables, the CDK stack from its constructs.
var DashboardVariables = []string{"Api", "CreateQueue", "LifecycleQueue", "NotifyQueue", "CreateDeadLetterQueue",
	"LifecycleDeadLetterQueue", "NotifyDeadLetterQueue", "StreamFailureQueue", "DispatcherFunction", "CreateWorker",
	"LifecycleWorker", "NotifyFunction", "ReconcilerFunction", "WatcherFunction"}

// NoWatcher stands for the watcher function's name when the stack has none: its widgets then
// draw nothing.
const NoWatcher = "-"

func newDashboard(s *Stack) *Dashboard {
	d := &Dashboard{Construct: constructs.NewConstruct(s.Stack, jsii.String("Dashboard"))}
	watcher := jsii.String(NoWatcher)
	if s.Watcher != nil {
		watcher = s.Watcher.Function.FunctionName()
	}
	vars := map[string]*string{
		"Api":                      s.API.HTTPAPI.ApiId(),
		"CreateQueue":              s.Pipeline.Create.Queue.QueueName(),
		"LifecycleQueue":           s.Pipeline.Lifecycle.Queue.QueueName(),
		"NotifyQueue":              s.Pipeline.Notify.Queue.QueueName(),
		"CreateDeadLetterQueue":    s.Pipeline.Create.DeadLetter.QueueName(),
		"LifecycleDeadLetterQueue": s.Pipeline.Lifecycle.DeadLetter.QueueName(),
		"NotifyDeadLetterQueue":    s.Pipeline.Notify.DeadLetter.QueueName(),
		"StreamFailureQueue":       s.Pipeline.StreamFailure.QueueName(),
		"DispatcherFunction":       s.Pipeline.Dispatcher.FunctionName(),
		"CreateWorker":             s.Workers.Create.FunctionName(),
		"LifecycleWorker":          s.Workers.Lifecycle.FunctionName(),
		"NotifyFunction":           s.Notify.Function.FunctionName(),
		"ReconcilerFunction":       s.Reconciler.Function.FunctionName(),
		"WatcherFunction":          watcher,
	}
	d.Resource = awscloudwatch.NewCfnDashboard(d.Construct, jsii.String("Dashboard"), &awscloudwatch.CfnDashboardProps{
		DashboardBody: awscdk.Fn_Sub(jsii.String(DashboardBody()), &vars),
	})
	return d
}

// URL is the dashboard's address in the CloudWatch console.
func (d *Dashboard) URL() *string {
	return jsii.String("https://" + *awscdk.Aws_REGION() + ".console.aws.amazon.com/cloudwatch/home?region=" +
		*awscdk.Aws_REGION() + "#dashboards/dashboard/" + *d.Resource.Ref())
}

// DashboardPeriod is the period of every widget's metrics.
const DashboardPeriod = 300

// widget is one metric graph of the dashboard.
type widget struct {
	title   string
	stat    string
	metrics [][]any
}

// metric is one metric row: namespace, name, dimension name/value pairs, and options
// (label, stat) last.
func metric(namespace, name string, opts map[string]any, dims ...string) []any {
	row := []any{namespace, name}
	for _, d := range dims {
		row = append(row, d)
	}
	if opts != nil {
		row = append(row, opts)
	}
	return row
}

// berthMetric is one of berth's EMF metrics of one function (the Function dimension is the
// function's name, ${fn}).
func berthMetric(name, fn string, opts map[string]any, dims ...string) []any {
	return metric(metrics.Namespace, name, opts, append([]string{"Function", "${" + fn + "}"}, dims...)...)
}

// search is a SEARCH expression over berth's metric name with the given dimensions (Function
// first), of the given functions: one line per dimension value (an Op, a Node).
func search(id, name, stat string, dims []string, fns ...string) []any {
	schema := metrics.Namespace
	for _, d := range append([]string{"Function"}, dims...) {
		schema += "," + d
	}
	of := ""
	for i, fn := range fns {
		if i > 0 {
			of += " OR "
		}
		of += `Function="${` + fn + `}"`
	}
	expr := fmt.Sprintf(`SEARCH('{%s} MetricName="%s" AND (%s)', '%s', %d)`, schema, name, of, stat, DashboardPeriod)
	return []any{map[string]any{"expression": expr, "id": id}}
}

func label(l string) map[string]any { return map[string]any{"label": l} }

func statLabel(stat, l string) map[string]any { return map[string]any{"stat": stat, "label": l} }

// dashboardWidgets are the dashboard's graphs, in reading order: requests and creates, the
// queues, failures and the background services.
func dashboardWidgets() []widget {
	q := func(name string) func(string) []any {
		return func(queue string) []any {
			return metric("AWS/SQS", name, label(queue), "QueueName", "${"+queue+"}")
		}
	}
	depth, age := q("ApproximateNumberOfMessagesVisible"), q("ApproximateAgeOfOldestMessage")
	workers := []string{"CreateWorker", "LifecycleWorker", "NotifyFunction"}
	return []widget{
		{title: "API requests and errors", stat: "Sum", metrics: [][]any{
			metric("AWS/ApiGateway", "Count", label("requests"), "ApiId", "${Api}"),
			metric("AWS/ApiGateway", "4xx", label("4xx (refused creates: 429)"), "ApiId", "${Api}"),
			metric("AWS/ApiGateway", "5xx", label("5xx"), "ApiId", "${Api}"),
		}},
		{title: "Creates: done, and create → running (ms)", stat: "p50", metrics: [][]any{
			berthMetric("CreateDuration", "CreateWorker", statLabel("SampleCount", "creates done")),
			berthMetric("CreateDuration", "CreateWorker", statLabel("p50", "create → running p50")),
			berthMetric("CreateDuration", "CreateWorker", statLabel("p99", "create → running p99")),
			berthMetric("QueueAge", "CreateWorker", statLabel("p99", "waited in the queue p99"), "Op", "create"),
		}},
		{title: "Admission: creates in progress (slots in use)", stat: "Maximum", metrics: [][]any{
			metric("AWS/Lambda", "ConcurrentExecutions", label("create invocations (slots)"), "FunctionName", "${CreateWorker}"),
			metric("AWS/Lambda", "Throttles", statLabel("Sum", "create invocations throttled"), "FunctionName", "${CreateWorker}"),
			berthMetric("AdmissionDrift", "ReconcilerFunction", statLabel("Sum", "admission count repaired by the reconciler")),
		}},
		{title: "Queue depth", stat: "Maximum", metrics: [][]any{depth("CreateQueue"), depth("LifecycleQueue"), depth("NotifyQueue")}},
		{title: "Oldest message age (s)", stat: "Maximum", metrics: [][]any{age("CreateQueue"), age("LifecycleQueue"), age("NotifyQueue")}},
		{title: "Dead letters", stat: "Maximum", metrics: [][]any{
			depth("CreateDeadLetterQueue"), depth("LifecycleDeadLetterQueue"), depth("NotifyDeadLetterQueue"), depth("StreamFailureQueue"),
			search("deadlettered", "DeadLettered", "Sum", []string{"Op"}, workers...),
		}},
		{title: "Failures by reason", stat: "Sum", metrics: [][]any{
			search("gaveup", "UnavailableGaveUp", "Sum", []string{"Op"}, workers...),
			search("retries", "Retries", "Sum", []string{"Op"}, workers...),
			search("rejected", "RejectedTransitions", "Sum", []string{"Kind"}, "CreateWorker", "LifecycleWorker", "ReconcilerFunction", "WatcherFunction"),
			berthMetric("PoisonMessages", "CreateWorker", label("poison messages (create)")),
			berthMetric("PoisonMessages", "LifecycleWorker", label("poison messages (lifecycle)")),
			berthMetric(outbox.MetricDispatchFailures, "DispatcherFunction", label("outbox items not dispatched")),
			berthMetric("ReconcileActions", "ReconcilerFunction", label("stuck instances failed"), "Action", "failed_stuck"),
		}},
		{title: "Reconciler health", stat: "Maximum", metrics: [][]any{
			berthMetric("ReconcileDuration", "ReconcilerFunction", label("pass duration (ms)")),
			berthMetric(outbox.MetricOldestPendingAge, "ReconcilerFunction", label("oldest undispatched outbox item (s)")),
			berthMetric("ReconcileErrors", "ReconcilerFunction", statLabel("Sum", "errors in passes")),
			metric("AWS/Lambda", "Errors", statLabel("Sum", "failed passes"), "FunctionName", "${ReconcilerFunction}"),
		}},
		{title: "Reconcile repairs", stat: "Sum", metrics: [][]any{
			search("repairs", "ReconcileActions", "Sum", []string{"Action"}, "ReconcilerFunction"),
		}},
		{title: "Watcher health", stat: "Sum", metrics: [][]any{
			search("events", "WatcherEvents", "Sum", []string{"Kind", "Node"}, "WatcherFunction"),
			search("unavailable", "WatcherNodeUnavailable", "Sum", []string{"Kind", "Node"}, "WatcherFunction"),
			metric("AWS/Lambda", "Errors", label("failed watches"), "FunctionName", "${WatcherFunction}"),
		}},
		{title: "Webhook deliveries", stat: "Sum", metrics: [][]any{
			berthMetric("WebhookDelivered", "NotifyFunction", label("delivered")),
			berthMetric("WebhookRetries", "NotifyFunction", label("retried")),
			metric("AWS/Lambda", "Errors", label("notify invocations failed"), "FunctionName", "${NotifyFunction}"),
		}},
		{title: "Outbox → queue dispatch latency (ms)", stat: "p99", metrics: [][]any{
			search("dispatch", outbox.MetricDispatchLatency, "p99", []string{"Queue"}, "DispatcherFunction"),
		}},
	}
}

// DashboardBody is the dashboard's body, its resources' names as ${Name} (DashboardVariables)
// and the region as ${AWS::Region}: what template.yaml's Dashboard writes with Fn::Sub, word
// for word (the parity test compares them). One widget a line, so that the template reads.
func DashboardBody() string {
	var lines []string
	for i, w := range dashboardWidgets() {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{
			"type": "metric", "x": (i % 3) * 8, "y": (i / 3) * 6, "width": 8, "height": 6,
			"properties": map[string]any{
				"title": w.title, "region": "${AWS::Region}", "view": "timeSeries", "stacked": false,
				"stat": w.stat, "period": DashboardPeriod, "metrics": w.metrics,
			},
		}); err != nil {
			panic(err) // maps, strings and numbers only
		}
		lines = append(lines, strings.TrimRight(b.String(), "\n"))
	}
	return "{\"widgets\": [\n" + strings.Join(lines, ",\n") + "\n]}"
}
