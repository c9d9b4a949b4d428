package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// InterruptedReason is the status_reason of a group member failed at start
// because container.recover_running_dag_on_start is false.
const InterruptedReason = "interrupted by a restart of berth; not resumed (container.recover_running_dag_on_start is false)"

// midOperation are the statuses in which a member waits for, or is in, an
// operation that the restart cut off. delete_pending and deleting are left
// to finish: a delete is itself a cleanup, and failing it would leave the
// container behind.
var midOperation = []fsm.Status{fsm.Pending, fsm.Creating, fsm.StartPending, fsm.Starting, fsm.StopPending, fsm.Stopping}

// InterruptGroups is what a start with recover_running_dag_on_start false
// does instead of resuming the groups that were unfinished: every group
// member that was in the middle of an operation is failed with
// InterruptedReason, and dag_node_cleanup_on_failed is requested with it
// (same write). Running members go on being watched; instances without a
// group are resumed as always. It returns how many members it failed.
// Run it before the outbox is dispatched again, so the cut-off operations
// find their members failed and let them go.
func (m *Manager) InterruptGroups(ctx context.Context) (int, error) {
	return m.InterruptGroupsBefore(ctx, time.Time{})
}

// InterruptGroupsBefore is InterruptGroups for a deployment that took over
// at before: only members unchanged since before are failed (a member
// changed since is the new deployment's own work). A zero before fails
// every member in the middle of an operation. It is idempotent: a member
// failed once is no longer in the middle of anything.
func (m *Manager) InterruptGroupsBefore(ctx context.Context, before time.Time) (int, error) {
	failed, cursor := 0, ""
	for {
		page, err := m.store.ListActive(ctx, cursor, 100)
		if err != nil {
			return failed, fmt.Errorf("listing active instances: %w", err)
		}
		for _, in := range page.Items {
			ok, err := m.interruptMember(ctx, in, before)
			if err != nil {
				return failed, err
			}
			if ok {
				failed++
			}
		}
		if page.NextCursor == "" {
			return failed, nil
		}
		cursor = page.NextCursor
	}
}

func (m *Manager) interruptMember(ctx context.Context, in container.Instance, before time.Time) (bool, error) {
	interrupted, from := false, in.Status
	_, err := m.advanceFrom(ctx, in, func(in container.Instance) (*store.TransitionParams, error) {
		interrupted = false
		if in.Group == "" || !containsStatus(midOperation, in.Status) || (!before.IsZero() && !in.UpdatedAt.Before(before)) {
			return nil, nil
		}
		interrupted, from = true, in.Status
		return m.failWrite(ctx, in, InterruptedReason, m.now().UTC()), nil
	})
	switch {
	case err == nil && interrupted:
		m.log.WarnContext(ctx, "group member interrupted by the restart", "instance_id", in.ID, "group", in.Group, "from", from)
		return true, nil
	case err == nil || errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("failing interrupted member %s: %w", in.ID, err)
	}
}

func containsStatus(list []fsm.Status, s fsm.Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
