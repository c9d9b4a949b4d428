package reconcile

import (
	"context"
	"errors"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// retain is the net behind the retention timers (berth serve's
// internal/expiry, the AWS watcher's, which reads the ended instances once
// per invocation): an ended instance past its delete_at is deleted here,
// through the same conditional write (manager.Expire). It walks up to
// maxInstances ended instances a pass, going on where the last pass
// stopped, so a deployment with many kept instances is covered over a few
// passes rather than in one long one.
func (r *Reconciler) retain(ctx context.Context, log *slog.Logger, rep *Report) {
	cursor, walked := r.endedCursor, 0
	for walked < r.maxInstances && ctx.Err() == nil {
		page, err := r.st.ListInstances(ctx, store.ListQuery{Statuses: []fsm.Status{fsm.Stopped, fsm.Failed},
			Limit: min(pageSize, r.maxInstances-walked), Cursor: cursor})
		if errors.Is(err, store.ErrInvalidCursor) && cursor != "" {
			cursor = ""
			continue
		}
		if err != nil {
			rep.fail(err)
			log.ErrorContext(ctx, "listing ended instances", "error", err)
			return
		}
		walked += len(page.Items)
		for _, inst := range page.Items {
			r.retainOne(ctx, log, inst, rep)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	r.endedCursor = cursor
}

// retainOne deletes inst if its retention has run out.
func (r *Reconciler) retainOne(ctx context.Context, log *slog.Logger, inst container.Instance, rep *Report) {
	at, ok := manager.Deadline(inst)
	if !ok || inst.DeleteAt == nil || r.now().Before(at) {
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
