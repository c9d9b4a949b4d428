package container

import (
	"testing"

	"github.com/berth-io/berth/internal/fsm"
)

// TestReserved: what an instance holds in each status; stopped, failed
// and one being deleted hold only their instance.
func TestReserved(t *testing.T) {
	r := Resources{CPU: "250m", Memory: "1Gi"}
	run := QuotaUse{Instances: 1, Running: 1, CPUMillis: 250, MemoryBytes: 1 << 30}
	pending := run
	pending.Pending = 1
	for _, tc := range []struct {
		status fsm.Status
		want   QuotaUse
	}{
		{fsm.Pending, pending}, {fsm.Creating, pending},
		{fsm.Running, run}, {fsm.Paused, run}, {fsm.StopPending, run}, {fsm.Stopping, run}, {fsm.StartPending, run}, {fsm.Starting, run},
		{fsm.Stopped, QuotaUse{Instances: 1}}, {fsm.Failed, QuotaUse{Instances: 1}},
		{fsm.DeletePending, QuotaUse{Instances: 1}}, {fsm.Deleting, QuotaUse{Instances: 1}},
	} {
		if got := Reserved(tc.status, r); got != tc.want {
			t.Errorf("Reserved(%s) = %+v, want %+v", tc.status, got, tc.want)
		}
	}
	if len(fsm.All) != 12 {
		t.Errorf("%d statuses: decide what a new one reserves", len(fsm.All))
	}
	if got := Reserved(fsm.Running, Resources{}); got != (QuotaUse{Instances: 1, Running: 1}) {
		t.Errorf("no resources: %+v", got)
	}
}

// TestQuotaLimitsRoundTrip: limits written as QuotaLimitsOf writes them
// read back the same.
func TestQuotaLimitsRoundTrip(t *testing.T) {
	for _, u := range []QuotaUse{{}, {Instances: 3, Running: 2, Pending: 1, CPUMillis: 1500, MemoryBytes: 8 << 30}, {CPUMillis: 250, MemoryBytes: 192 << 20}} {
		got, err := QuotaLimitsOf(u).Parse()
		if err != nil || got != u {
			t.Errorf("%+v → %+v → %+v, %v", u, QuotaLimitsOf(u), got, err)
		}
	}
}
