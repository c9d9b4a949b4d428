package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
)

// errStaleLeft makes a create wait (a retry after the backoff) while stale
// members of its group are still being deleted.
type errStaleLeft struct{ ids []string }

func (e errStaleLeft) Error() string {
	return fmt.Sprintf("waiting for %d stale member(s) of the group to be deleted first "+
		"(cleanup_dag_node_containers_before_start): %s", len(e.ids), strings.Join(e.ids, ", "))
}

// clearStale is the create's first step for a queued group member: its
// group's stale members (manager.StaleMembers) are deleted before its
// container is made. Only a pending member clears: once claimed (creating)
// the stale ones were gone already.
func (w *Worker) clearStale(ctx context.Context, log *slog.Logger, inst container.Instance, msg outbox.Message) error {
	if inst.Status != fsm.Pending || inst.Group == "" {
		return nil
	}
	left, err := w.m.ClearStaleMembers(ctx, inst, msg.RequestID)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		log.InfoContext(ctx, "create waits for stale group members to be deleted", "group", inst.Group, "stale", left)
		return errStaleLeft{ids: left}
	}
	return nil
}
