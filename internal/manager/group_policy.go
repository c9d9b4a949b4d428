package manager

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// GroupPolicies are the DAG keys of the container: config section as berth applies them to the
// members of a group (instances created with the same group). The zero
// value applies no policy at all.
type GroupPolicies struct {
	// DeleteOnSuccess deletes a member that exits 0
	// (container.delete_container_on_node_success).
	DeleteOnSuccess bool
	// OnFailed is applied to a member that fails
	// (container.dag_node_cleanup_on_failed); empty means none.
	OnFailed config.CleanupPolicy
	// OnFinished is applied to every member by a group finish
	// (container.dag_node_cleanup_on_dag_finished); empty means none.
	OnFinished config.CleanupPolicy
	// ResetAllowed lets a group reset delete every member, and deletes a
	// new member's stale members before it is created (ClearStaleMembers)
	// (container.cleanup_dag_node_containers_before_start).
	ResetAllowed bool
}

// GroupPoliciesFrom reads the policies from the container section.
func GroupPoliciesFrom(c config.Container) GroupPolicies {
	return GroupPolicies{
		DeleteOnSuccess: c.DeleteContainerOnNodeSuccess,
		OnFailed:        c.DAGNodeCleanupOnFailed,
		OnFinished:      c.DAGNodeCleanupOnDAGFinished,
		ResetAllowed:    c.CleanupDAGNodeContainersBeforeStart,
	}
}

// view is p as the API shows it: an unset policy is none.
func (p GroupPolicies) view() container.GroupPolicies {
	orNone := func(c config.CleanupPolicy) string {
		if c == "" {
			return string(config.CleanupNone)
		}
		return string(c)
	}
	return container.GroupPolicies{
		DeleteContainerOnNodeSuccess:        p.DeleteOnSuccess,
		DAGNodeCleanupOnFailed:              orNone(p.OnFailed),
		DAGNodeCleanupOnDAGFinished:         orNone(p.OnFinished),
		CleanupDAGNodeContainersBeforeStart: p.ResetAllowed,
	}
}

// cleanupOp is the node-policy operation that applies p; ok=false for
// none (and for an unset policy).
func cleanupOp(p config.CleanupPolicy) (container.Op, bool) {
	switch p {
	case config.CleanupStop:
		return container.OpCleanupStop, true
	case config.CleanupDelete:
		return container.OpCleanupDelete, true
	}
	return "", false
}

// groupOp is the group-policy operation (finish, reset) that applies p.
func groupOp(p config.CleanupPolicy) (container.Op, bool) {
	switch p {
	case config.CleanupStop:
		return container.OpGroupStop, true
	case config.CleanupDelete:
		return container.OpGroupDelete, true
	}
	return "", false
}

// memberCleanup is the cleanup a group member's move to status `to` asks
// for, as an outbox item to write in the same transaction as the move (so
// the move and its policy commit together, or neither does), with a note
// for the move's event; nil when no policy applies. selfExit says the
// container ended by itself (not on berth's stop request): only such an
// exit with code 0 is a node success. Every move into stopped or failed
// (the state loop's, failWrite's) asks it.
func (m *Manager) memberCleanup(ctx context.Context, inst container.Instance, to fsm.Status, selfExit bool, exitCode *int) (*container.OutboxItem, string) {
	if inst.Group == "" {
		return nil, ""
	}
	var (
		op  container.Op
		key string
	)
	switch {
	case to == fsm.Stopped && selfExit && exitCode != nil && *exitCode == 0 && m.groups.DeleteOnSuccess:
		op, key = container.OpCleanupDelete, "delete_container_on_node_success"
	case to == fsm.Failed:
		var ok bool
		if op, ok = cleanupOp(m.groups.OnFailed); !ok {
			return nil, ""
		}
		key = "dag_node_cleanup_on_failed=" + string(m.groups.OnFailed)
	default:
		return nil, ""
	}
	item := newItem(ctx, inst, op, "", m.now().UTC())
	return &item, "cleanup: " + key
}

// policyNote joins a status reason and a cleanup note.
func policyNote(reason, note string) string {
	if note == "" {
		return reason
	}
	return fmt.Sprintf("%s (%s)", reason, note)
}
