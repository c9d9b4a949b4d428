package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// StaleReason starts the status_reason of a member deleted because a newer
// member of its group took its name
// (container.cleanup_dag_node_containers_before_start).
const StaleReason = "stale: replaced by a newer member of the same name in its group (cleanup_dag_node_containers_before_start)"

// staleMembers returns the members of inst's group that are stale for it:
// those of the same owner and group with the same name, created before it.
// A group is a DAG run and a member's name its node: a member that a newer
// create names again is the node's container from an earlier run (or an
// earlier attempt), which the seed's cleanup_dag_node_containers_before_start
// removes before the node starts again. Members of other names are other
// nodes, left alone; an instance without a group has no stale members.
func (m *Manager) staleMembers(ctx context.Context, inst container.Instance) ([]container.Instance, error) {
	if inst.Group == "" {
		return nil, nil
	}
	members, err := m.members(ctx, inst.Owner, inst.Group)
	if err != nil {
		return nil, err
	}
	var out []container.Instance
	for _, o := range members {
		if o.ID != inst.ID && o.Name == inst.Name && olderThan(o, inst) {
			out = append(out, o)
		}
	}
	return out, nil
}

// olderThan orders members by creation, the id breaking ties.
func olderThan(a, b container.Instance) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// ClearStaleMembers applies container.cleanup_dag_node_containers_before_start
// for a member about to be created: each of its staleMembers is asked to be
// deleted (delete_pending with its delete item, one conditional write,
// written at most once: a member already being deleted gets nothing new),
// and the ids of those that still exist are returned. The create must wait
// until none is left, so that the node's stale container is gone before
// its new one starts. A stale member in the middle of a start is asked
// once that has settled (a later call). With the key false nothing is
// stale: it returns nothing.
func (m *Manager) ClearStaleMembers(ctx context.Context, inst container.Instance, requestID string) ([]string, error) {
	if !m.groups.ResetAllowed {
		return nil, nil
	}
	stale, err := m.staleMembers(ctx, inst)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, o := range stale {
		gone, err := m.deleteStale(ctx, o, inst.ID, requestID)
		if err != nil {
			return left, fmt.Errorf("removing stale member %s of group %s: %w", o.ID, o.Group, err)
		}
		if !gone {
			left = append(left, o.ID)
		}
	}
	return left, nil
}

// deleteStale asks for one stale member's delete; gone reports that the
// member no longer exists.
func (m *Manager) deleteStale(ctx context.Context, o container.Instance, newer, requestID string) (gone bool, err error) {
	requested := false
	_, err = m.advanceFrom(ctx, o, func(in container.Instance) (*store.TransitionParams, error) {
		requested = false
		if in.Status == fsm.DeletePending || in.Status == fsm.Deleting || !fsm.Can(in.Status, fsm.DeletePending) {
			return nil, nil
		}
		requested = true
		p, _ := requestWrite(ctx, in, request{op: container.OpDelete, to: fsm.DeletePending,
			event: container.EventDeleteRequested, reason: fmt.Sprintf("%s: %s", StaleReason, newer),
			actor: container.ActorSystem, requestID: requestID, at: m.now().UTC()})
		return p, nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	if requested {
		m.log.InfoContext(ctx, "stale group member delete requested", "instance_id", o.ID, "group", o.Group,
			"name", o.Name, "newer", newer, "request_id", requestID)
	}
	return false, nil
}
