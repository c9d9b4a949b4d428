package berthstack

import (
	"fmt"
	"slices"
	"testing"
)

// TestNotify: the notify queue redrives to its own dead-letter queue after MaxAttempts
// receives, with a visibility of six notify timeouts; one mapping consumes it, one delivery per
// invocation, failures per record, a bounded concurrency and no reservation; the notify
// function's role may do what delivering needs and nothing else (no table writes but the
// outbox mark, no secret, no runtime), and is the only one that may put events on the bus.
func TestNotify(t *testing.T) {
	s := synth(t, withProps(func(p *Props) { p.MaxAttempts = 4 }))
	qid, dlq := s.logicalID(t, s.stack.Pipeline.Notify.Queue), s.logicalID(t, s.stack.Pipeline.Notify.DeadLetter)
	qp := s.props(t, qid)
	rp := qp["RedrivePolicy"].(map[string]any)
	if num(rp["maxReceiveCount"]) != 4 || fmt.Sprint(rp["deadLetterTargetArn"]) != fmt.Sprint(getAtt(dlq, "Arn")) {
		t.Errorf("notify queue redrive %v; want 4 receives to %s", rp, dlq)
	}
	fn := s.logicalID(t, s.stack.Notify.Function)
	if consumer := consumerOf(t, s, qid); consumer != fn {
		t.Errorf("the notify queue's consumer is %s, want %s", consumer, fn)
	}
	fp := s.props(t, fn)
	if num(fp["Timeout"]) != NotifyTimeout.Seconds() || fp["ReservedConcurrentExecutions"] != nil {
		t.Errorf("notify function timeout %v, reserved %v; want %s and none", fp["Timeout"], fp["ReservedConcurrentExecutions"], NotifyTimeout)
	}
	if vis := num(qp["VisibilityTimeout"]); vis != VisibilityFactor*NotifyTimeout.Seconds() {
		t.Errorf("notify queue visibility %v s; want %d × %s", vis, VisibilityFactor, NotifyTimeout)
	}
	s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName":          ref(fn),
		"EventSourceArn":        getAtt(qid, "Arn"),
		"BatchSize":             NotifyBatchSize,
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"ScalingConfig":         map[string]any{"MaximumConcurrency": NotifyMaxConcurrency},
	})
	stmts, _ := rolePermissions(t, s)
	role := fp["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	var actions []string
	for _, st := range stmts[role] {
		actions = append(actions, st.action)
	}
	slices.Sort(actions)
	actions = slices.Compact(actions)
	want := []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "events:PutEvents", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage",
		"sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"}
	if !slices.Equal(actions, want) {
		t.Errorf("notify role actions %v, want %v", actions, want)
	}
	for _, st := range stmts[role] {
		if st.action == "sqs:SendMessage" && st.resource != fmt.Sprintf(`{"Fn::GetAtt":["%s","Arn"]}`, qid) {
			t.Errorf("notify may send to %s; want its own queue only", st.resource)
		}
	}
}
