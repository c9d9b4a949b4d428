package berthstack

import (
	"testing"
	"time"
)

// TestWatcher: the watcher's schedule starts a watch every minute and each watch (its timeout)
// lasts longer than that, so two overlap (two reserved with a fleet of one shard, none by
// default: a fanned-out tick's shards watch at once); its role may invoke the watcher only;
// with RuntimeWatcher off nothing of it is deployed.
func TestWatcher(t *testing.T) {
	if WatcherTimeout < time.Minute+20*time.Second || WatcherTimeout >= 2*time.Minute {
		t.Errorf("WatcherTimeout %v: want one minute plus an overlap of 20 s or more, under two (two at a time)", WatcherTimeout)
	}
	s := synth(t, DefaultProps())
	fn := s.logicalID(t, s.stack.Watcher.Function)
	p := s.props(t, fn)
	if num(p["Timeout"]) != WatcherTimeout.Seconds() || num(p["MemorySize"]) != WatcherMemoryMB || p["ReservedConcurrentExecutions"] != nil {
		t.Errorf("watcher function %v", p)
	}
	one := synth(t, withProps(func(p *Props) { p.FleetShards = 1 }))
	if r := num(one.props(t, one.logicalID(t, one.stack.Watcher.Function))["ReservedConcurrentExecutions"]); r != WatcherReserved {
		t.Errorf("FleetShards 1: watcher reserved concurrency %v, want %d", r, WatcherReserved)
	}
	s.has(t, "AWS::Scheduler::Schedule", map[string]any{
		"ScheduleExpression": WatcherSchedule,
		"Target": map[string]any{
			"Arn":         map[string]any{"Fn::GetAtt": []any{fn, "Arn"}},
			"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0},
		},
	})

	off := synth(t, withProps(func(p *Props) { p.RuntimeWatcher = false }))
	if off.stack.Watcher != nil || len(off.ofType("AWS::Lambda::Function")) != 8 || len(off.ofType("AWS::Scheduler::Schedule")) != 1 {
		t.Errorf("RuntimeWatcher off: watcher %v, %d functions, %d schedules; want none of the watcher's",
			off.stack.Watcher, len(off.ofType("AWS::Lambda::Function")), len(off.ofType("AWS::Scheduler::Schedule")))
	}
}
