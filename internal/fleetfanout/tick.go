package fleetfanout

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/scheduletick"
)

// Tick is any event a schedule invokes a loop's function with: the
// Scheduler's Input (events/reconciler-scheduler.json), or an EventBridge
// rule's scheduled event (events/reconciler-scheduled.json).
type Tick struct {
	events.EventBridgeEvent
	scheduletick.Input
}

// At is the tick's scheduled time: the Scheduler's scheduled_time, else
// the EventBridge event's time, else now (a direct invocation).
func (t Tick) At(now time.Time) time.Time {
	if at, err := time.Parse(time.RFC3339, t.ScheduledTime); err == nil {
		return at
	}
	if !t.Time.IsZero() {
		return t.Time
	}
	return now
}

// isSQS says whether an event is an SQS event source's batch (it has
// "Records") rather than a tick.
func isSQS(raw json.RawMessage) bool {
	var probe struct {
		Records json.RawMessage `json:"Records"`
	}
	return json.Unmarshal(raw, &probe) == nil && len(probe.Records) > 0 && string(probe.Records) != "null"
}
