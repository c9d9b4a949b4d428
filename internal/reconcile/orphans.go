package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// orphans removes the containers whose instance is gone: those not matched
// to an active instance of this pass, older than OrphanGrace, whose
// instance GetInstance does not find. Presence is never in doubt, so a
// partial listing does not stop this step. The containers of terminal
// instances it finds on the way are brought in line with them (terminal),
// whatever their age: the grace protects a create in flight, which a
// terminal instance does not have, so a failed instance's container
// started behind berth's back is stopped at the next pass.
func (r *Reconciler) orphans(ctx context.Context, log *slog.Logger, lists map[string]*listing, active map[string]bool, rep *Report) {
	now := r.now()
	budget := r.maxInstances
	known := make(map[string]bool) // instance ids found in the store this pass
	for _, kind := range r.kinds {
		l := lists[kind]
		for id, states := range l.byInstance {
			if active[id] || known[id] {
				continue
			}
			var old []runtime.State
			for _, s := range states {
				if now.Sub(s.CreatedAt) < r.orphanGrace {
					rep.OrphansDeferred++ // never removed as an orphan this pass
					continue
				}
				old = append(old, s)
			}
			if budget <= 0 || ctx.Err() != nil {
				rep.Truncated = true
				return
			}
			budget--
			inst, err := r.st.GetInstance(ctx, id)
			switch {
			case err == nil:
				known[id] = true // stopped, failed, or active beyond this pass's window
				if inst.Status.Terminal() {
					r.terminal(ctx, log.With("instance_id", id, "status", string(inst.Status)), l, inst, now, rep)
				}
				continue
			case !errors.Is(err, store.ErrNotFound):
				rep.fail(fmt.Errorf("looking up the instance of container %s: %w", runtime.ObjectName(id), err))
				log.ErrorContext(ctx, "looking up a container's instance", "op", "remove_orphan", "instance_id", id, "error", err)
				continue
			}
			for _, s := range old {
				r.removeOrphan(ctx, log, l.rt, runtime.Ref{InstanceID: id, Node: s.Node, RuntimeID: s.RuntimeID}, s, rep)
			}
		}
		for _, s := range l.unlabelled {
			// Labelled berth's but naming no instance: nothing can own it.
			if now.Sub(s.CreatedAt) < r.orphanGrace {
				rep.OrphansDeferred++
				continue
			}
			r.removeOrphan(ctx, log, l.rt, runtime.Ref{Node: s.Node, RuntimeID: s.RuntimeID}, s, rep)
		}
	}
}

// removeRetries bounds the retries of an orphan's removal that failed in a
// way that may pass: another reconciler (or the delete worker) removing the
// same container makes the engine answer "removal already in progress".
var removeRetries = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

func (r *Reconciler) removeOrphan(ctx context.Context, log *slog.Logger, rt runtime.Runtime, ref runtime.Ref, s runtime.State, rep *Report) {
	err := rt.Delete(ctx, ref)
	for _, wait := range removeRetries {
		if err == nil || !runtime.Retryable(err) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		err = rt.Delete(ctx, ref)
	}
	if err != nil {
		rep.fail(fmt.Errorf("removing orphaned container %s on %s: %w", s.Name, s.Node, err))
		log.ErrorContext(ctx, "removing an orphaned container", "op", "remove_orphan", "instance_id", ref.InstanceID,
			"container", s.Name, "node", s.Node, "error", err)
		return
	}
	rep.OrphansRemoved++
	log.WarnContext(ctx, "orphaned container removed", "op", "remove_orphan", "instance_id", ref.InstanceID,
		"container", s.Name, "node", s.Node, "runtime_id", s.RuntimeID, "created_at", s.CreatedAt,
		"age_s", r.now().Sub(s.CreatedAt).Seconds())
}
