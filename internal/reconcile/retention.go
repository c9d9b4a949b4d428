package reconcile

import (
	"context"
	"errors"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
)

// retain is the net behind the retention timers (berth serve's
// internal/expiry, the AWS watcher's): an ended instance past its
// delete_at is deleted here, through the same conditional write
// (manager.Expire). It reads only the instances due by now
// (store.InstanceStore.ListDeadlines), up to maxInstances a pass; the
// active ones among them are expire's, in the pass's main walk.
func (r *Reconciler) retain(ctx context.Context, log *slog.Logger, rep *Report) {
	now := r.now()
	for cursor, walked := "", 0; walked < r.maxInstances && ctx.Err() == nil; {
		page, err := r.st.ListDeadlines(ctx, now, cursor, min(pageSize, r.maxInstances-walked))
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				rep.fail(err)
				log.ErrorContext(ctx, "listing the instances due", "error", err)
			}
			return
		}
		walked += len(page.Items)
		for _, inst := range page.Items {
			if inst.Status.Terminal() {
				r.retainOne(ctx, log, inst, rep)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return
		}
	}
}

// retainOne deletes inst if its retention has run out.
func (r *Reconciler) retainOne(ctx context.Context, log *slog.Logger, inst container.Instance, rep *Report) {
	at, ok := manager.Deadline(inst)
	if !ok || r.now().Before(at) {
		return
	}
	out, err := r.m.Expire(ctx, inst.ID, at)
	if err != nil {
		rep.fail(err)
		log.ErrorContext(ctx, "deleting a retained instance", "instance_id", inst.ID, "error", err)
		return
	}
	if out == manager.ExpiryActed {
		rep.RetentionDeleted++
		log.InfoContext(ctx, "retention reached: deleted by the reconciler", "instance_id", inst.ID, "delete_at", at)
	}
}
