package monitor

import (
	"context"

	"github.com/berth-io/berth/internal/manager"
)

// Converger brings a terminal (stopped or failed) instance's container in
// line with its status (reconcile.Reconciler does, as its passes do).
// Converge must be safe to call at any time and more than once: it reads
// the instance and the container's live state itself, and does nothing for
// an instance that is not terminal or no longer exists.
type Converger interface {
	Converge(ctx context.Context, instanceID string) error
}

// Converging returns loop, which also asks c to converge the instance when
// the state loop did not take a container's start (the instance is failed,
// from which the FSM allows no start): a container started behind berth's
// back is stopped when its start event arrives, not at the reconciler's
// next look.
func Converging(loop StateLoop, c Converger) StateLoop {
	return converging{loop: loop, c: c}
}

type converging struct {
	loop StateLoop
	c    Converger
}

var _ StateLoop = converging{}

func (cv converging) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	applied, err := cv.loop.OnEvent(ctx, ob)
	if err != nil || ob.Kind != manager.ObservedStarted {
		return applied, err
	}
	switch applied {
	case manager.AppliedRejected, manager.AppliedStale:
		// Stale too: a start stamped by an engine clock behind berth's
		// looks older than the failure; the converger checks the
		// container's live state either way.
		return applied, cv.c.Converge(ctx, ob.InstanceID)
	}
	return applied, nil
}
