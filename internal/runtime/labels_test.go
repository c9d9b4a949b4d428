package runtime_test

import (
	"maps"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

func TestLabels(t *testing.T) {
	inst := container.Instance{
		ID: "01ABC", Owner: "alice", Template: "jupyter", Group: "team-a",
		Labels: map[string]string{"app": "mine", "berth.instance-id": "someone-else", "tier": "instance"},
		Spec: container.Spec{Labels: map[string]string{
			"tier": "template", "cost-center": "42", "berth.managed": "false", "berth.scope": "other",
		}},
	}
	got := runtime.Labels(inst, "prod")
	want := map[string]string{
		"app": "mine", "tier": "template", "cost-center": "42",
		"berth.managed": "true", "berth.instance-id": "01ABC", "berth.owner": "alice",
		"berth.template": "jupyter", "berth.group": "team-a", "berth.scope": "prod",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Labels() =\n%v\nwant\n%v", got, want)
	}
	if _, ok := runtime.Labels(inst, "")["berth.scope"]; ok {
		t.Error("no scope must mean no scope label (a user's is dropped too)")
	}
}

func TestOwns(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		scope  string
		want   bool
	}{
		{"same instance", map[string]string{"berth.managed": "true", "berth.instance-id": "i1"}, "", true},
		{"same instance and scope", map[string]string{"berth.managed": "true", "berth.instance-id": "i1", "berth.scope": "s"}, "s", true},
		{"other instance", map[string]string{"berth.managed": "true", "berth.instance-id": "i2"}, "", false},
		{"other scope", map[string]string{"berth.managed": "true", "berth.instance-id": "i1", "berth.scope": "t"}, "s", false},
		{"not berth's", map[string]string{"berth.instance-id": "i1"}, "", false},
		{"no labels", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runtime.Owns(tt.labels, "i1", tt.scope); got != tt.want {
				t.Errorf("Owns() = %v, want %v", got, tt.want)
			}
		})
	}
}
