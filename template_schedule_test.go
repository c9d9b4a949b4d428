package berth_test

import (
	"testing"

	"github.com/berth-io/berth/internal/scheduletick"
)

// Every EventBridge Scheduler schedule of template.yaml invokes its
// function with the one Input the scheduled functions decode
// (scheduletick.InputTemplate, which infra's schedules use as well).
func TestScheduleInputsAreTheOne(t *testing.T) {
	c := loadTemplate(t)
	schedules := c.resourcesOf("AWS::Scheduler::Schedule")
	if len(schedules) == 0 {
		t.Fatal("template.yaml has no AWS::Scheduler::Schedule")
	}
	for name, r := range schedules {
		target := asMap(r["Target"]) // r: the properties
		if got := scalar(target["Input"]); got != scheduletick.InputTemplate {
			t.Errorf("%s: Target.Input %q, want scheduletick.InputTemplate %q", name, got, scheduletick.InputTemplate)
		}
	}
}
