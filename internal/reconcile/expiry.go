package reconcile

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
)

// expire is the net behind the timers of an active instance's deadlines
// (berth serve's internal/expiry, the AWS watcher's): an instance past its
// expires_at whose expiry is still to do, or past the restart_at of a
// restart waiting its backoff, has it carried out here, through the same
// conditional write (manager.Expire), so a timer that acts at the same
// moment makes one of the two a no-op. It reports whether it acted (the
// instance moved, so the pass leaves it for the next).
func (r *Reconciler) expire(ctx context.Context, log *slog.Logger, inst container.Instance, rep *Report) bool {
	at, ok := manager.Deadline(inst)
	if !ok || inst.Status.Terminal() || r.now().Before(at) {
		return false
	}
	out, err := r.m.Expire(ctx, inst.ID, at)
	if err != nil {
		rep.fail(err)
		log.ErrorContext(ctx, "expiring", "instance_id", inst.ID, "error", err)
		return false
	}
	if out != manager.ExpiryActed {
		return false
	}
	rep.Expired++
	log.InfoContext(ctx, "expired by the reconciler", "instance_id", inst.ID, "at", at)
	return true
}
