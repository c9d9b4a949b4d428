package berth_test

import (
	"testing"
	"time"
)

// TestTemplateWatcher: the watcher function, its schedule, role and log
// group all go with the RuntimeWatcher parameter (true by default); its
// timeout is longer than its schedule's period, so that two invocations
// overlap and the runtimes' event streams never stop; two run at a time
// at most (reserved when UseReservedConcurrency is), 128 MB, and a failed
// or throttled tick is not kept.
func TestTemplateWatcher(t *testing.T) {
	c := loadTemplate(t)
	if p := c.param("RuntimeWatcher"); scalar(p["Default"]) != "true" {
		t.Errorf("RuntimeWatcher defaults to %v, want true", p["Default"])
	}
	for _, id := range []string{"WatcherFunction", "WatchSchedule", "WatchScheduleRole", "WatcherFunctionLogs"} {
		if cond := asMap(asMap(c.doc["Resources"])[id])["Condition"]; cond != "WatchRuntimes" {
			t.Errorf("%s: condition %v, want WatchRuntimes", id, cond)
		}
	}
	fn := c.resource("WatcherFunction", "AWS::Serverless::Function")
	s := c.resource("WatchSchedule", "AWS::Scheduler::Schedule")
	if tgt := getAtt(asMap(s["Target"])["Arn"]); tgt == nil || tgt[0] != "WatcherFunction" {
		t.Errorf("schedule target %v, want the watcher", s["Target"])
	}
	if s["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("schedule %v, want rate(1 minute)", s["ScheduleExpression"])
	}
	timeout, _ := fn["Timeout"].(float64)
	if period := time.Minute; time.Duration(timeout)*time.Second < period+20*time.Second || time.Duration(timeout)*time.Second >= 2*period {
		t.Errorf("watcher timeout %vs: want between one period plus 20 s of overlap and two periods (at most two at a time)", timeout)
	}
	if r := c.loopReservedConcurrency(fn); r != 2.0 {
		t.Errorf("watcher reserved concurrency %v, want 2 (the ending and the beginning invocation)", r)
	}
	if fn["MemorySize"] != 128.0 {
		t.Errorf("watcher memory %v, want 128 MB", fn["MemorySize"])
	}
	if eic := asMap(fn["EventInvokeConfig"]); eic["MaximumRetryAttempts"] != 0.0 || eic["MaximumEventAgeInSeconds"] != 60.0 {
		t.Errorf("watcher EventInvokeConfig %v, want no retries and 60 s", eic)
	}
}
