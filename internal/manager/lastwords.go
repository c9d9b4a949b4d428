package manager

import (
	"context"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// LastWordsReader reads the last lines inst's container printed, bounded
// by container.LastWords's limits (runtime.ReadLastWords): nil, without an
// error, when it printed nothing or is gone. The manager holds no runtime
// and reads no logs: an observer that holds the container's runtime gives
// one with what it reports (Observation.LastWords, Failure.LastWords), and
// the manager calls it only for an end that keeps last words
// (keepsLastWords), before the write that records the end.
type LastWordsReader func(ctx context.Context, inst container.Instance) (*container.LastWords, error)

// PolicyRequested ends the status reason of a stop or delete that a group
// policy (node or group) requested, as the worker's cleanup writes it: such
// a member's last words are kept with its end (RequestedByPolicy).
const PolicyRequested = " requested by the group's cleanup policy"

// RequestedByPolicy reports whether inst's stop or delete in progress was
// requested by a group policy rather than by a user.
func RequestedByPolicy(inst container.Instance) bool {
	return strings.HasSuffix(inst.StatusReason, PolicyRequested)
}

// keepsLastWords reports whether the end an observation records keeps the
// container's last words: a failure of the container's own (a non-zero
// exit, an OOM kill) or the end of a stop a group policy requested. A
// container destroyed has no output left to read.
func keepsLastWords(inst container.Instance, to fsm.Status, ob Observation) bool {
	if ob.Kind != ObservedExited {
		return false
	}
	return to == fsm.Failed || inst.Status == fsm.Stopping && RequestedByPolicy(inst)
}

// lastWords reads inst's last words with read; nil when there is no reader
// or the read failed: the end is recorded either way. The lines are the
// owner's data and are never logged; a failure is logged by its error,
// which by the runtime.LogReader contract holds none.
func (m *Manager) lastWords(ctx context.Context, inst container.Instance, read LastWordsReader) *container.LastWords {
	if read == nil {
		return nil
	}
	words, err := read(ctx, inst)
	if err != nil {
		m.log.WarnContext(ctx, "last words not read; the end is recorded without them", "instance_id", inst.ID, "error", err)
		return nil
	}
	return words
}
