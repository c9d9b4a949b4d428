// Package scheduletick is what an EventBridge Scheduler schedule invokes a
// scheduled function (the reconciler, the watcher) with: one Input
// template, given to the schedules by template.yaml and by the CDK app
// (infra), and one decoding of it, shared by the functions.
package scheduletick

import (
	"context"
	"log/slog"
)

// InputTemplate is a schedule target's Input: EventBridge Scheduler sends it
// as it is (no EventBridge event around it), with its context attributes
// filled in (events/reconciler-scheduler.json is one). template.yaml's
// schedules carry it word for word (checked by the repository's template
// tests) and infra's are built from it.
const InputTemplate = `{"schedule_arn":"<aws.scheduler.schedule-arn>","scheduled_time":"<aws.scheduler.scheduled-time>",` +
	`"execution_id":"<aws.scheduler.execution-id>","attempt_number":"<aws.scheduler.attempt-number>"}`

// Input is InputTemplate as a function receives it, filled in. All its
// fields are empty when the function was invoked otherwise (an EventBridge
// rule's scheduled event, a test).
type Input struct {
	ScheduleARN   string `json:"schedule_arn"`
	ScheduledTime string `json:"scheduled_time"`
	ExecutionID   string `json:"execution_id"`
	AttemptNumber string `json:"attempt_number"`
}

// Log says which schedule tick an invocation runs for, when it runs for
// one (an empty Input logs nothing).
func (in Input) Log(ctx context.Context, log *slog.Logger) {
	if in.ExecutionID == "" {
		return
	}
	log.InfoContext(ctx, "schedule tick", "schedule_arn", in.ScheduleARN, "scheduled_time", in.ScheduledTime,
		"execution_id", in.ExecutionID, "attempt_number", in.AttemptNumber)
}
