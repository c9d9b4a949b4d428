package reconcile

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
)

// frozen is the observation of a container found paused behind a running
// instance (observePaused) or running behind a paused one (observeResumed):
// a pause or resume whose worker has not recorded it yet, or one made
// outside berth. The listing may be older than the instance read again
// before the observation is applied, so the container is inspected once
// more: ok=false when it is no longer as listed (a pause or resume in
// flight), and the next pass judges again.
func (r *Reconciler) frozen(ctx context.Context, rt runtime.Runtime, inst container.Instance, st runtime.State, v verdict,
	now time.Time) (manager.Observation, bool) {
	want, kind := runtime.PhasePaused, manager.ObservedPaused
	if v == observeResumed {
		want, kind = runtime.PhaseRunning, manager.ObservedResumed
	}
	full, err := rt.Inspect(ctx, runtime.Ref{InstanceID: st.InstanceID, Node: st.Node, RuntimeID: st.RuntimeID})
	if err != nil || full.Phase != want {
		return manager.Observation{}, false
	}
	node := full.Node
	if node == "" {
		node = st.Node
	}
	return manager.Observation{InstanceID: inst.ID, Kind: kind, At: now, NodeName: node, RuntimeID: full.RuntimeID,
		Message: "reconciler"}, true
}
