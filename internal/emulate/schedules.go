package emulate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/samtemplate"
)

// parseRate reads a rate expression: rate(1 minute), rate(5 minutes) …
// Cron expressions are not emulated (the caller can give a period).
func parseRate(expr string) (time.Duration, error) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "rate(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	if !ok || !ok2 {
		return 0, fmt.Errorf("schedule %q: only rate(...) expressions are emulated; give a period instead", expr)
	}
	f := strings.Fields(inner)
	if len(f) != 2 {
		return 0, fmt.Errorf("schedule %q: want rate(N unit)", expr)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("schedule %q: want a positive whole number", expr)
	}
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour,
		"day": 24 * time.Hour, "days": 24 * time.Hour}[f[1]]
	if unit == 0 {
		return 0, fmt.Errorf("schedule %q: unknown unit %q", expr, f[1])
	}
	return time.Duration(n) * unit, nil
}

// scheduler invokes a function every period with a scheduled event (or
// the schedule's Input), as EventBridge Scheduler does. A tick that finds
// every instance of the function busy (its reserved concurrency) is
// dropped and logged, as a throttled invocation without retries is.
type scheduler struct {
	s      *samtemplate.Schedule
	fn     *Function
	every  time.Duration
	region string
	log    *slog.Logger
	// atStart ticks once at the start too (runsAlways).
	atStart bool
}

// contextAttributes fills in the EventBridge Scheduler context attributes
// an Input names (<aws.scheduler.schedule-arn> …), as the Scheduler does
// at each invocation; the Input is otherwise sent as it is.
func (sc *scheduler) contextAttributes(input string, now time.Time) string {
	if !strings.Contains(input, "<aws.scheduler.") {
		return input
	}
	return strings.NewReplacer(
		"<aws.scheduler.schedule-arn>", sc.arn(),
		"<aws.scheduler.scheduled-time>", now.UTC().Truncate(time.Second).Format(time.RFC3339),
		"<aws.scheduler.execution-id>", newUUID(),
		"<aws.scheduler.attempt-number>", "1", // no retries are emulated
	).Replace(input)
}

// arn is the schedule's ARN, in the default schedule group.
func (sc *scheduler) arn() string {
	return "arn:aws:scheduler:" + sc.region + ":" + samtemplate.DefaultAccountID + ":schedule/default/" + sc.s.Name
}

func (sc *scheduler) run(ctx context.Context) {
	if sc.atStart {
		sc.tick(ctx, time.Now())
	}
	t := time.NewTicker(sc.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sc.tick(ctx, now)
		}
	}
}

// tick invokes the function once, asynchronously, unless it is at its
// concurrency.
func (sc *scheduler) tick(ctx context.Context, now time.Time) {
	payload := []byte(sc.contextAttributes(sc.s.Input, now))
	if len(payload) == 0 {
		ev := events.EventBridgeEvent{Version: "0", ID: newUUID(), DetailType: "Scheduled Event", Source: "aws.scheduler",
			AccountID: samtemplate.DefaultAccountID, Time: now.UTC().Truncate(time.Second), Region: sc.region,
			Resources: []string{sc.arn()},
			Detail:    json.RawMessage(`{}`)}
		payload, _ = json.Marshal(ev)
	}
	if !sc.fn.TryAcquire() {
		sc.log.Warn("schedule tick dropped: the function is at its concurrency", "schedule", sc.s.Name, "function", sc.fn.ID)
		return
	}
	go func() {
		defer sc.fn.Release()
		sc.fn.Invoke(ctx, payload)
	}()
}

// runsAlways reports whether the template marks f as always running
// (Metadata RunsAlways: the watcher, whose invocations overlap so that one
// is always running). On AWS such a function has run since the deploy:
// the emulator starts its first invocation at once rather than a period
// later, and keeps its period (a shorter one would only pile up dropped
// ticks).
func runsAlways(f *samtemplate.Function) bool {
	v, _ := f.Metadata["RunsAlways"].(bool)
	return v
}
