package reconcile

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
)

// expire is the net behind the lifetime timers (berth serve's
// internal/expiry, the AWS watcher's): an instance past its
// expires_at whose expiry is still to do is expired here, through the same
// conditional write (manager.Expire), so a timer that acts at the same
// moment makes one of the two a no-op. It reports whether it acted (the
// instance moved, so the pass leaves it for the next).
func (r *Reconciler) expire(ctx context.Context, log *slog.Logger, inst container.Instance, rep *Report) bool {
	if !manager.Expiring(inst) || r.now().Before(*inst.ExpiresAt) {
		return false
	}
	out, err := r.m.Expire(ctx, inst.ID, *inst.ExpiresAt)
	if err != nil {
		rep.fail(err)
		log.ErrorContext(ctx, "expiring", "instance_id", inst.ID, "error", err)
		return false
	}
	if out != manager.ExpiryActed {
		return false
	}
	rep.Expired++
	log.InfoContext(ctx, "expired by the reconciler", "instance_id", inst.ID, "expires_at", inst.ExpiresAt)
	return true
}
