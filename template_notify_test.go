package berth_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/notify/webhook"
)

// TestTemplateNotify: deliveries have their own queue (redrive after
// max_attempts receives to its own dead-letter queue, with an alarm),
// which the dispatcher and the reconciler's sweep send to, consumed by
// the notify function one delivery per invocation, with failures
// reported per record and a bounded concurrency; the function outlasts
// one POST and the queue's visibility six of its invocations. Its role
// holds what delivering needs and nothing of a worker's: its own queue
// (consume, and send for the re-sent retries), the outbox item it marks,
// the subscriptions it reads, the bus; no runtime secret, no template
// secret, no EKS or ECR.
func TestTemplateNotify(t *testing.T) {
	c := loadTemplate(t)
	q := c.resource("NotifyQueue", "AWS::SQS::Queue")
	rp := asMap(q["RedrivePolicy"])
	if paramOf(rp["maxReceiveCount"]) != "MaxAttempts" {
		t.Errorf("NotifyQueue: maxReceiveCount %v, want !Ref MaxAttempts", rp["maxReceiveCount"])
	}
	if dlq := getAtt(rp["deadLetterTargetArn"]); dlq == nil || dlq[0] != "NotifyDeadLetterQueue" {
		t.Errorf("NotifyQueue: dead letters go to %v, want NotifyDeadLetterQueue", rp["deadLetterTargetArn"])
	}
	c.resource("NotifyDeadLetterQueue", "AWS::SQS::Queue")

	fn := c.resource("NotifyFunction", "AWS::Serverless::Function")
	timeout, _ := fn["Timeout"].(float64)
	if got := time.Duration(timeout) * time.Second; got < webhook.DefaultTimeout+10*time.Second || got > 15*time.Minute {
		t.Errorf("NotifyFunction timeout %s: want one POST (%s) plus 10 s .. 15 min", got, webhook.DefaultTimeout)
	}
	if vis, _ := q["VisibilityTimeout"].(float64); vis < 6*timeout {
		t.Errorf("NotifyQueue visibility %v s < 6 × the notify function's timeout %v s", vis, timeout)
	}
	if fn["ReservedConcurrentExecutions"] != nil {
		t.Errorf("NotifyFunction reserves concurrency (%v): that would take it from the lifecycle worker's pool", fn["ReservedConcurrentExecutions"])
	}

	var mappings []map[string]any
	for _, m := range c.resourcesOf("AWS::Lambda::EventSourceMapping") {
		if src := getAtt(m["EventSourceArn"]); src != nil && src[0] == "NotifyQueue" {
			mappings = append(mappings, m)
		}
	}
	if len(mappings) != 1 {
		t.Fatalf("NotifyQueue has %d consumers, want one", len(mappings))
	}
	m := mappings[0]
	maxConc, _ := asMap(m["ScalingConfig"])["MaximumConcurrency"].(float64)
	if paramOf(m["FunctionName"]) != "NotifyFunction" || m["BatchSize"] != float64(1) ||
		!slices.Equal(asList(m["FunctionResponseTypes"]), []any{"ReportBatchItemFailures"}) || maxConc < 2 || maxConc > 100 {
		t.Errorf("notify mapping %v: want NotifyFunction, batch size 1, ReportBatchItemFailures, a maximum concurrency of 2..100", m)
	}

	// The role, statement by statement (conditional policies too).
	grants := map[string][]string{} // action -> resources
	for _, pol := range c.functionPolicies("NotifyFunction") {
		p := asMap(pol)
		if ifs := asList(p["Fn::If"]); ifs != nil {
			if ifs[0] != "HasConfigParameter" {
				t.Errorf("NotifyFunction: a policy under %v; want only the configuration parameter's condition", ifs[0])
			}
			p = asMap(ifs[1])
		}
		for _, st := range asList(p["Statement"]) {
			st := asMap(st)
			for _, a := range listOf(st["Action"]) {
				for _, r := range listOf(st["Resource"]) {
					grants[scalar(a)] = append(grants[scalar(a)], resourceName(r))
				}
			}
		}
	}
	want := map[string][]string{
		"dynamodb:GetItem":            {"OutboxTable", "CountersTable"},
		"dynamodb:UpdateItem":         {"OutboxTable"},
		"dynamodb:PutItem":            {"CountersTable"},
		"dynamodb:DeleteItem":         {"CountersTable"},
		"sqs:ReceiveMessage":          {"NotifyQueue"},
		"sqs:DeleteMessage":           {"NotifyQueue"},
		"sqs:GetQueueAttributes":      {"NotifyQueue"},
		"sqs:ChangeMessageVisibility": {"NotifyQueue"},
		"sqs:SendMessage":             {"NotifyQueue"},
		"events:PutEvents":            {"event-bus/${EventBusName}"},
		"ssm:GetParameter":            {"parameter${ConfigParameterName}"},
	}
	for a, res := range grants {
		w, ok := want[a]
		if !ok {
			t.Errorf("NotifyFunction may %s on %v; delivering does not need it", a, res)
			continue
		}
		slices.Sort(res)
		slices.Sort(w)
		if !slices.Equal(res, w) {
			t.Errorf("NotifyFunction: %s on %v, want %v", a, res, w)
		}
	}
	for a := range want {
		if grants[a] == nil {
			t.Errorf("NotifyFunction lacks %s", a)
		}
	}
	env := c.env("NotifyFunction")
	if paramOf(env["BERTH_QUEUE_NOTIFY_QUEUE_URL"]) != "NotifyQueue" || env["BERTH_CONFIG_SECRET"] != nil {
		t.Errorf("NotifyFunction environment %v: want its queue, and no runtime secret", env)
	}

	// Who sends to the notify queue: the dispatcher and the sweep.
	for _, f := range []string{"DispatcherFunction", "ReconcilerFunction"} {
		if paramOf(c.env(f)["BERTH_QUEUE_NOTIFY_QUEUE_URL"]) != "NotifyQueue" {
			t.Errorf("%s is not told the notify queue", f)
		}
		sends := false
		for _, pol := range c.functionPolicies(f) {
			p := asMap(pol)
			if ifs := asList(p["Fn::If"]); ifs != nil {
				p = asMap(ifs[1])
			}
			for _, st := range asList(p["Statement"]) {
				st := asMap(st)
				if slices.Contains(listOf(st["Action"]), any("sqs:SendMessage")) &&
					slices.ContainsFunc(listOf(st["Resource"]), func(r any) bool { return resourceName(r) == "NotifyQueue" }) {
					sends = true
				}
			}
		}
		if !sends {
			t.Errorf("%s may not send to NotifyQueue", f)
		}
	}
	alarmed := map[string]bool{}
	for _, a := range c.resourcesOf("AWS::CloudWatch::Alarm") {
		for _, d := range asList(a["Dimensions"]) {
			v := asMap(d)["Value"]
			if g := getAtt(v); g != nil {
				alarmed[g[0]] = true
			}
			if r := paramOf(v); r != "" {
				alarmed[r] = true
			}
		}
	}
	for _, r := range []string{"NotifyDeadLetterQueue", "NotifyFunction"} {
		if !alarmed[r] {
			t.Errorf("no alarm on %s", r)
		}
	}
}

// resourceName names a policy resource as written: the resource of a
// !GetAtt or !Ref, or the part of a !Sub ARN after its last ':'.
func resourceName(r any) string {
	if g := getAtt(r); g != nil {
		return g[0]
	}
	if p := paramOf(r); p != "" {
		return p
	}
	s := fmt.Sprint(asMap(r)["Fn::Sub"])
	if s == "" || s == "<nil>" {
		s = fmt.Sprint(r)
	}
	return s[strings.LastIndex(s, ":")+1:]
}

// listOf is v as a list: a list as it is, one value as a list of one.
func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}
