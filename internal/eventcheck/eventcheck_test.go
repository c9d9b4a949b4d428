package eventcheck

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

func TestCheck(t *testing.T) {
	ev := func(seq int64, typ string, from, to fsm.Status) container.Event {
		return container.Event{Seq: seq, Type: typ, From: from, To: to}
	}
	tests := []struct {
		name       string
		evs        []container.Event
		violations int
		rejected   int
		failures   int
		last       fsm.Status
		deleted    bool
	}{
		{name: "created, run, deleted", evs: []container.Event{
			ev(1, container.EventCreateRequested, "", fsm.Pending), ev(2, container.EventCreating, fsm.Pending, fsm.Creating),
			ev(3, container.EventStarted, fsm.Creating, fsm.Running), ev(4, container.EventDeleteRequested, fsm.Running, fsm.DeletePending),
			ev(5, container.EventDeleting, fsm.DeletePending, fsm.Deleting), ev(6, container.EventDeleted, fsm.Deleting, ""),
		}, last: fsm.Deleting, deleted: true},
		{name: "a change the FSM forbids", evs: []container.Event{
			ev(1, container.EventCreateRequested, "", fsm.Pending), ev(2, container.EventStopped, fsm.Pending, fsm.Running),
		}, violations: 1, last: fsm.Running},
		{name: "a change from where the last did not end", evs: []container.Event{
			ev(1, container.EventCreateRequested, "", fsm.Pending), ev(2, container.EventStarted, fsm.Creating, fsm.Running),
		}, violations: 1, last: fsm.Running},
		{name: "one event recorded twice", evs: []container.Event{
			ev(1, container.EventCreateRequested, "", fsm.Pending), ev(2, container.EventCreating, fsm.Pending, fsm.Creating),
			ev(2, container.EventCreating, fsm.Pending, fsm.Creating),
		}, violations: 2, last: fsm.Creating},
		{name: "failed, a record on the terminal instance, a rejection", evs: []container.Event{
			ev(1, container.EventCreateRequested, "", fsm.Pending), ev(2, container.EventFailed, fsm.Pending, fsm.Failed),
			ev(3, container.EventReconciled, fsm.Failed, fsm.Failed), ev(4, container.EventTransitionReject, "", ""),
		}, rejected: 1, failures: 1, last: fsm.Failed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Check("i", tc.evs)
			if len(f.Violations) != tc.violations || len(f.Rejected) != tc.rejected || len(f.Failures) != tc.failures ||
				f.Last != tc.last || f.Deleted != tc.deleted {
				t.Errorf("Check: %+v, want %d violations, %d rejected, %d failures, last %q, deleted %v",
					f, tc.violations, tc.rejected, tc.failures, tc.last, tc.deleted)
			}
		})
	}
}
