package emulate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/samtemplate"
)

// TestScheduleInputFromTemplate: template.yaml's reconcile schedule reaches
// the reconciler as EventBridge Scheduler sends it: the target's Input with
// the context attributes filled in, not an EventBridge event.
func TestScheduleInputFromTemplate(t *testing.T) {
	t.Parallel()
	stack, err := samtemplate.Load("../../template.yaml", samtemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s *samtemplate.Schedule
	for _, x := range stack.Schedules {
		if x.Function == "ReconcilerFunction" {
			s = x
		}
	}
	if s == nil || s.Input == "" {
		t.Fatalf("no reconcile schedule with an Input: %+v", s)
	}
	sc := &scheduler{s: s, region: "eu-west-1"}
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	var got map[string]string
	if err := json.Unmarshal([]byte(sc.contextAttributes(s.Input, now)), &got); err != nil {
		t.Fatalf("the filled-in Input is not JSON: %v", err)
	}
	want := map[string]string{"schedule_arn": "arn:aws:scheduler:eu-west-1:" + samtemplate.DefaultAccountID + ":schedule/default/" + s.Name,
		"scheduled_time": "2026-11-29T08:00:00Z", "attempt_number": "1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got["execution_id"]) == 0 || len(got) != 4 {
		t.Errorf("input %v", got)
	}
	if plain := "{\"a\":1}"; sc.contextAttributes(plain, now) != plain {
		t.Error("an Input without context attributes changed")
	}
}

// TestWatcherRunsAlways: of template.yaml's scheduled functions, the
// watcher is the one marked as always running (so the emulator starts it at
// once and --schedule-every leaves it alone), and its invocations are
// longer than its period; the reconciler is not.
func TestWatcherRunsAlways(t *testing.T) {
	t.Parallel()
	stack, err := samtemplate.Load("../../template.yaml", samtemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range stack.Schedules {
		every, err := parseRate(s.Expression)
		if err != nil {
			t.Fatal(err)
		}
		f := stack.Functions[s.Function]
		got[s.Function] = runsAlways(f)
		if runsAlways(f) && f.Timeout <= every {
			t.Errorf("%s runs always, but its invocations (%v) do not overlap its period (%v)", s.Function, f.Timeout, every)
		}
	}
	if !got["WatcherFunction"] || got["ReconcilerFunction"] || len(got) != 2 {
		t.Errorf("runs always, by function: %v; want the watcher only", got)
	}
	off, err := samtemplate.Load("../../template.yaml", samtemplate.Options{Parameters: map[string]string{"RuntimeWatcher": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := off.Functions["WatcherFunction"]; ok || len(off.Schedules) != 1 {
		t.Errorf("RuntimeWatcher=false: %d schedules, watcher function present %v", len(off.Schedules), ok)
	}
}
