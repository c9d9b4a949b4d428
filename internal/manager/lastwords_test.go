package manager

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestKeepsLastWords: which ends keep last words.
func TestKeepsLastWords(t *testing.T) {
	code := func(c int) *int { return &c }
	policy := container.Instance{Status: fsm.Stopping, StatusReason: "stop" + PolicyRequested}
	tests := []struct {
		name string
		inst container.Instance
		to   fsm.Status
		ob   Observation
		want bool
	}{
		{"non-zero exit", container.Instance{Status: fsm.Running}, fsm.Failed, Observation{Kind: ObservedExited, ExitCode: code(3)}, true},
		{"zero exit", container.Instance{Status: fsm.Running}, fsm.Stopped, Observation{Kind: ObservedExited, ExitCode: code(0)}, false},
		{"destroyed: nothing left to read", container.Instance{Status: fsm.Running}, fsm.Failed, Observation{Kind: ObservedDestroyed}, false},
		{"the owner's stop", container.Instance{Status: fsm.Stopping, StatusReason: "stop requested"}, fsm.Stopped,
			Observation{Kind: ObservedExited, ExitCode: code(137)}, false},
		{"a policy's stop", policy, fsm.Stopped, Observation{Kind: ObservedExited, ExitCode: code(137)}, true},
		{"a start", container.Instance{Status: fsm.Creating}, fsm.Running, Observation{Kind: ObservedStarted}, false},
	}
	for _, tc := range tests {
		if got := keepsLastWords(tc.inst, tc.to, tc.ob); got != tc.want {
			t.Errorf("%s: keepsLastWords = %v, want %v", tc.name, got, tc.want)
		}
	}
}
