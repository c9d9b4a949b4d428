package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// stuckFor reports the instance's stuck timeout and whether it is past it
// in a status the policy handles.
func (r *Reconciler) stuckFor(inst container.Instance, age time.Duration) (time.Duration, bool) {
	timeout, ok := r.timeouts[inst.Status]
	if _, handled := manager.WaitsFor(inst.Status); !ok || !handled || age < timeout {
		return timeout, false
	}
	return timeout, true
}

// stuck applies the stuck policy (package documentation) to an instance the
// sync left as it was.
func (r *Reconciler) stuck(ctx context.Context, log *slog.Logger, inst container.Instance, now time.Time, age time.Duration,
	undispatched map[string]bool, undispatchedOK bool, rep *Report) {
	if _, stuck := r.stuckFor(inst, age); !stuck {
		return
	}
	op, _ := manager.WaitsFor(inst.Status)
	if !undispatchedOK {
		return // cannot tell whether the sweeper has it
	}
	if undispatched[inst.ID] {
		rep.StuckLeftToSweeper++
		return
	}
	n, err := r.requeues(ctx, inst)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			rep.Gone++
			return
		}
		rep.fail(fmt.Errorf("counting re-enqueues of %s: %w", inst.ID, err))
		log.ErrorContext(ctx, "reading events", "op", "requeue", "error", err)
		return
	}
	ageS := age.Truncate(time.Second)
	if n < r.maxRequeues {
		r.requeue(ctx, log.With("op", "requeue"), inst, op, now, ageS, n, rep)
		return
	}
	r.failStuck(ctx, log.With("op", "fail_stuck"), inst, now, ageS, n, rep)
}

// requeues counts the re-enqueue events of the instance's current status
// episode: those after the last event that moved it into that status.
func (r *Reconciler) requeues(ctx context.Context, inst container.Instance) (int, error) {
	n, cursor := 0, ""
	for {
		page, err := r.st.ListEvents(ctx, inst.ID, cursor, 100)
		if err != nil {
			return 0, err
		}
		for _, ev := range page.Items {
			switch {
			case ev.To == inst.Status && ev.From != inst.Status:
				n = 0 // entered the status (again)
			case ev.From == inst.Status && ev.To == inst.Status && ev.Actor == container.ActorSystem &&
				strings.HasPrefix(ev.Message, RequeueMarker):
				n++
			}
		}
		if page.NextCursor == "" {
			return n, nil
		}
		cursor = page.NextCursor
	}
}

// requeue asks again for the operation the status waits for (a fresh
// outbox item, the instance unchanged but for status_reason and
// updated_at, which restarts the timeout), decided on the listed version.
func (r *Reconciler) requeue(ctx context.Context, log *slog.Logger, inst container.Instance, op container.Op,
	now time.Time, age time.Duration, done int, rep *Report) {
	msg := fmt.Sprintf("%s%s: %s for %s without progress (re-enqueue %d of %d)", RequeueMarker, op, inst.Status, age, done+1, r.maxRequeues)
	requestID := "reconcile-" + rep.PassID
	itemID, err := r.m.Requeue(ctx, inst, op, msg, requestID, now)
	if r.written(ctx, log, inst, err, rep) {
		rep.Requeued++
		log.WarnContext(ctx, "stuck instance re-enqueued", "outbox_id", itemID, "request_id", requestID,
			"age_s", age.Seconds(), "requeue", done+1, "max_requeues", r.maxRequeues, "operation", string(op))
	}
}

// failStuck moves an instance that made no progress through its
// re-enqueues to failed, saying why, decided on the listed version.
func (r *Reconciler) failStuck(ctx context.Context, log *slog.Logger, inst container.Instance, now time.Time, age time.Duration,
	done int, rep *Report) {
	reason := fmt.Sprintf("%s made no progress for %s", inst.Status, age)
	if done > 0 {
		reason += fmt.Sprintf(" after %d re-enqueue(s) by the reconciler", done)
	}
	failed, err := r.m.Fail(ctx, inst.ID, manager.Failure{Reason: reason, At: now, Version: inst.Version})
	if r.written(ctx, log, inst, err, rep) && failed {
		rep.FailedStuck++
		log.WarnContext(ctx, "stuck instance failed", "reason", reason)
	}
}

// written sorts the outcome of a conditional write: true when it was made.
func (r *Reconciler) written(ctx context.Context, log *slog.Logger, inst container.Instance, err error, rep *Report) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrConflict), errors.Is(err, manager.ErrMoved):
		rep.Conflicts++
		log.InfoContext(ctx, "instance moved since it was listed; skipped this pass", "listed_version", inst.Version)
	case errors.Is(err, store.ErrNotFound):
		rep.Gone++
	default:
		rep.fail(fmt.Errorf("%s: %w", inst.ID, err))
		log.ErrorContext(ctx, "writing instance", "error", err)
	}
	return false
}
