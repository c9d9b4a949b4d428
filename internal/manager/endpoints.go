package manager

import (
	"context"
	"slices"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// endpointsRule is the store as the manager writes to it, with the one rule
// of container.Instance.Endpoints: an instance names endpoints only while
// its container may run, so every transition to a terminal status
// (stopped, failed) clears them, whichever write makes it (the state loop,
// a worker, the reconciler, a group policy). They are set by the state
// loop from what the runtime reports (Observation.Endpoints).
type endpointsRule struct{ store.Store }

func (s endpointsRule) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	if p.To.Terminal() {
		update := p.Update
		p.Update = func(i *container.Instance) {
			if update != nil {
				update(i)
			}
			i.Endpoints = nil
		}
	}
	return s.Store.Transition(ctx, p)
}

// endpointsBackfill reports whether a start observed of an instance
// already running brings endpoints it does not have yet (the monitor's
// start event carries none; the worker's report after it does).
func endpointsBackfill(inst container.Instance, ob Observation) bool {
	return ob.Kind == ObservedStarted && len(ob.Endpoints) > 0 && !slices.Equal(inst.Endpoints, ob.Endpoints)
}
