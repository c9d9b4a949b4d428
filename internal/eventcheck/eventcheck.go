// Package eventcheck checks an instance's event history against the state
// machine: what the chaos tests (berth serve's and the emulated AWS
// stack's) assert of every history, in one place.
package eventcheck

import (
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Findings are what one history shows.
type Findings struct {
	// Violations are status changes the FSM forbids, changes that do not
	// start where the last one ended and sequence numbers that do not
	// increase, each described with the instance's id and the event's
	// sequence number.
	Violations []string
	// Rejected are the TransitionRejected events.
	Rejected []container.Event
	// Failures are the events that changed the status to failed.
	Failures []container.Event
	// Last is the last status the history changed to ("" if none).
	Last fsm.Status
	// Deleted reports whether the history records the instance's deletion.
	Deleted bool
}

// Check reads the history of instance id (oldest first, by sequence number). A record that
// changes no status (From == To: what the reconciler did to a terminal
// instance's container) must still start where the last change ended.
func Check(id string, evs []container.Event) Findings {
	var f Findings
	for i, ev := range evs {
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			// One event recorded twice (a retried write), or out of order.
			f.Violations = append(f.Violations, fmt.Sprintf("%s #%d %s: after #%d %s", id, ev.Seq, ev.Type, evs[i-1].Seq, evs[i-1].Type))
		}
		if ev.Type == container.EventDeleted {
			f.Deleted = true
		}
		if ev.Type == container.EventTransitionReject {
			f.Rejected = append(f.Rejected, ev)
			continue
		}
		if ev.To == "" {
			continue
		}
		if f.Last != "" && ev.From != f.Last {
			f.Violations = append(f.Violations, fmt.Sprintf("%s #%d %s: from %s, but the last status was %s", id, ev.Seq, ev.Type, ev.From, f.Last))
		}
		if ev.From == ev.To {
			continue
		}
		if ev.From != "" && !fsm.Can(ev.From, ev.To) {
			f.Violations = append(f.Violations, fmt.Sprintf("%s #%d %s: %s → %s is not allowed", id, ev.Seq, ev.Type, ev.From, ev.To))
		}
		f.Last = ev.To
		if ev.To == fsm.Failed {
			f.Failures = append(f.Failures, ev)
		}
	}
	return f
}
