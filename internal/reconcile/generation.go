package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// DeploymentStore keeps the record of the deployment generation that last
// took over (store.DeploymentStore): written only conditionally on its
// version, so that of reconcilers racing, one write wins.
type DeploymentStore interface {
	GetDeployment(ctx context.Context) (store.Deployment, error)
	PutDeployment(ctx context.Context, d store.Deployment) (store.Deployment, error)
}

var _ DeploymentStore = (store.Store)(nil)

// GroupInterrupter fails the group members that an earlier deployment left
// in the middle of an operation and that have not changed since before
// (manager.Manager.InterruptGroupsBefore). It must be idempotent: it may
// run more than once for one takeover.
type GroupInterrupter interface {
	InterruptGroupsBefore(ctx context.Context, before time.Time) (int, error)
}

var _ GroupInterrupter = (*manager.Manager)(nil)

// maxTakeoverRaces bounds how often Takeover.Run reads the record again
// after losing a write to another reconciler.
const maxTakeoverRaces = 8

// Takeover is container.recover_running_dag_on_start where berth has no
// start of its own (the Lambda functions): a new deployment generation
// taking over is the (re)start. The first reconciler of a generation
// records it (with the time it saw it) and, when Interrupt is set (the key
// is false), interrupts the groups the earlier deployment left running,
// once: a reconciler that loses the race, or runs after the takeover was
// settled, does nothing; one that finds it unsettled (its first reconciler
// ended half-way) interrupts again with the same cut-off, which fails
// nothing twice and nothing the new deployment did.
type Takeover struct {
	// Generation identifies the running deployment (wiring.Generation).
	Generation string
	// Interrupt is !container.recover_running_dag_on_start.
	Interrupt bool
	Store     DeploymentStore
	Groups    GroupInterrupter
	Clock     func() time.Time
	Logger    *slog.Logger
}

// Run records the generation if it is new and does what its takeover
// asks, if that is not done yet. It returns how many members it failed.
func (t *Takeover) Run(ctx context.Context) (int, error) {
	if t.Generation == "" {
		return 0, errors.New("takeover: no deployment generation")
	}
	now, log := time.Now, t.Logger
	if t.Clock != nil {
		now = t.Clock
	}
	if log == nil {
		log = slog.Default()
	}
	failed := 0
	for race := 0; race < maxTakeoverRaces; race++ {
		d, err := t.Store.GetDeployment(ctx)
		if err != nil {
			return failed, fmt.Errorf("reading the deployment record: %w", err)
		}
		if d.Generation != t.Generation {
			previous := d.Generation
			d, err = t.Store.PutDeployment(ctx, store.Deployment{Generation: t.Generation, Since: now().UTC(),
				Settled: !t.Interrupt, Version: d.Version})
			if errors.Is(err, store.ErrDeploymentChanged) {
				continue
			}
			if err != nil {
				return failed, fmt.Errorf("recording deployment %s: %w", t.Generation, err)
			}
			log.InfoContext(ctx, "a new deployment took over", "generation", t.Generation, "previous", previous,
				"recover_running_dag_on_start", !t.Interrupt)
		}
		if d.Settled {
			return failed, nil
		}
		n, err := t.Groups.InterruptGroupsBefore(ctx, d.Since)
		failed += n
		if err != nil {
			return failed, fmt.Errorf("interrupting the groups deployment %s took over: %w", t.Generation, err)
		}
		if n > 0 {
			log.WarnContext(ctx, "group members the last deployment left mid-operation were failed (recover_running_dag_on_start is false)",
				"members", n, "generation", t.Generation)
		}
		d.Settled = true
		_, err = t.Store.PutDeployment(ctx, d)
		switch {
		case errors.Is(err, store.ErrDeploymentChanged):
			continue // another reconciler settled it, or a newer deployment took over
		case err != nil:
			return failed, fmt.Errorf("settling deployment %s: %w", t.Generation, err)
		}
		return failed, nil
	}
	return failed, fmt.Errorf("recording deployment %s: lost %d races for the record", t.Generation, maxTakeoverRaces)
}
