package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ErrResetDisabled answers a group reset while
// container.cleanup_dag_node_containers_before_start is false (409).
var ErrResetDisabled = errors.New("group reset is switched off: container.cleanup_dag_node_containers_before_start is false")

// The outcomes a group finish may report.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// groupOwner is whose group a caller addresses: their own, or for an admin
// the owner they name.
func groupOwner(c identity.Caller, owner string) string {
	if c.Admin && owner != "" {
		return owner
	}
	return c.User
}

// members returns every instance of owner's group, oldest first.
func (m *Manager) members(ctx context.Context, owner, group string) ([]container.Instance, error) {
	var out []container.Instance
	q := store.ListQuery{Owner: owner, Group: group, Limit: 100}
	for {
		page, err := m.store.ListInstances(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("listing group %s: %w", group, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Cursor = page.NextCursor
	}
}

func summarize(owner, group string, members []container.Instance) container.GroupSummary {
	s := container.GroupSummary{Group: group, Owner: owner, Total: len(members), Counts: map[fsm.Status]int{}}
	for _, in := range members {
		s.Counts[in.Status]++
	}
	return s
}

// ListGroups returns the caller's groups (an admin may name another owner)
// in name order, limit (1-100, 0 means 50) at a time after the group named
// after. It reads every instance of the owner once per call.
func (m *Manager) ListGroups(ctx context.Context, c identity.Caller, owner, after string, limit int) (items []container.GroupSummary, next string, err error) {
	if limit < 0 || limit > 100 {
		return nil, "", &ValidationError{Fields: []FieldError{{Field: "limit", Message: "must be 1-100"}}}
	}
	if limit == 0 {
		limit = 50
	}
	owner = groupOwner(c, owner)
	byGroup := map[string][]container.Instance{}
	q := store.ListQuery{Owner: owner, Limit: 100}
	for {
		page, err := m.store.ListInstances(ctx, q)
		if err != nil {
			return nil, "", fmt.Errorf("listing groups: %w", err)
		}
		for _, in := range page.Items {
			if in.Group != "" && in.Group > after {
				byGroup[in.Group] = append(byGroup[in.Group], in)
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		names = append(names, g)
	}
	slices.Sort(names)
	if len(names) > limit {
		names, next = names[:limit], names[limit-1]
	}
	items = make([]container.GroupSummary, 0, len(names))
	for _, g := range names {
		items = append(items, summarize(owner, g, byGroup[g]))
	}
	return items, next, nil
}

// GetGroup returns a group of the caller's (an admin may name another
// owner) with its members; a group without members is ErrNotFound.
func (m *Manager) GetGroup(ctx context.Context, c identity.Caller, owner, group string) (container.Group, error) {
	owner = groupOwner(c, owner)
	if !validGroupName(group) {
		return container.Group{}, fmt.Errorf("group %.64q: %w", group, ErrNotFound)
	}
	members, err := m.members(ctx, owner, group)
	if err != nil {
		return container.Group{}, err
	}
	if len(members) == 0 {
		return container.Group{}, fmt.Errorf("group %s has no containers: %w", group, ErrNotFound)
	}
	pol := m.groups.view()
	return container.Group{GroupSummary: summarize(owner, group, members), Members: members, Policies: &pol}, nil
}

func validGroupName(g string) bool {
	var f fields
	validGroup(&f, "group", g)
	return g != "" && f.err() == nil
}

// FinishGroup ends a group: dag_node_cleanup_on_dag_finished (none, stop
// or delete) is applied to every member. A queued member (pending) is
// cancelled in any case, so that it is never created later: deleted under
// delete, failed with a reason otherwise. Every other member gets a
// cleanup item written with it, which the workers carry out once the member
// is not in the middle of another operation.
func (m *Manager) FinishGroup(ctx context.Context, c identity.Caller, owner, group, outcome, requestID string) (container.GroupResult, error) {
	var f fields
	switch outcome {
	case OutcomeSucceeded, OutcomeFailed, OutcomeCancelled:
	case "":
		f.add("outcome", "is required: succeeded, failed or cancelled")
	default:
		f.add("outcome", "must be succeeded, failed or cancelled")
	}
	if err := f.err(); err != nil {
		return container.GroupResult{}, err
	}
	policy := m.groups.OnFinished
	if policy == "" {
		policy = config.CleanupNone
	}
	why := fmt.Sprintf("group %s finished (%s): dag_node_cleanup_on_dag_finished=%s", group, outcome, policy)
	return m.applyToGroup(ctx, c, owner, group, outcome, policy, why, requestID)
}

// ResetGroup deletes every member of a group, queued ones included, before
// the group is started again; ErrResetDisabled when
// cleanup_dag_node_containers_before_start is false. A group without
// members is reset already.
func (m *Manager) ResetGroup(ctx context.Context, c identity.Caller, owner, group, requestID string) (container.GroupResult, error) {
	if !m.groups.ResetAllowed {
		return container.GroupResult{}, ErrResetDisabled
	}
	why := fmt.Sprintf("group %s reset: cleanup_dag_node_containers_before_start", group)
	return m.applyToGroup(ctx, c, owner, group, "", config.CleanupDelete, why, requestID)
}

// applyToGroup applies policy to every member of owner's group. A finish
// (outcome set; a reset has none) is also notified: its deliveries
// (group_notify.go) ride on the write of its last member, so that they
// commit with the finish's last step, never before it.
func (m *Manager) applyToGroup(ctx context.Context, c identity.Caller, owner, group, outcome string, policy config.CleanupPolicy, why, requestID string) (container.GroupResult, error) {
	owner = groupOwner(c, owner)
	res := container.GroupResult{Group: group, Owner: owner, Outcome: outcome, Policy: string(policy), Members: []container.MemberAction{}}
	if !validGroupName(group) {
		return res, fmt.Errorf("group %.64q: %w", group, ErrNotFound)
	}
	members, err := m.members(ctx, owner, group)
	if err != nil {
		return res, err
	}
	for i, in := range members {
		var carry func(container.MemberAction) ([]container.OutboxItem, error)
		if outcome != "" && i == len(members)-1 {
			carry = func(act container.MemberAction) ([]container.OutboxItem, error) {
				done := res
				done.Members = append(slices.Clip(res.Members), act)
				return m.groupDeliveries(ctx, in.ID, done)
			}
		}
		act, carried, err := m.applyToMember(ctx, c, in, policy, why, requestID, carry)
		if err != nil {
			// What is written stays written; a repeat of the call finishes
			// the rest (members already handled answer already_*).
			return res, fmt.Errorf("%s of member %s: %w", why, in.ID, err)
		}
		res.Members = append(res.Members, act)
		if carry != nil && !carried {
			// The last member is gone: an earlier one carries the finish.
			if err := m.carryFinish(ctx, members[:i], res); err != nil {
				return res, fmt.Errorf("%s: %w", why, err)
			}
		}
	}
	m.log.InfoContext(ctx, "group policy requested", "group", group, "owner", owner, "policy", policy,
		"members", len(res.Members), "request_id", requestID)
	return res, nil
}

// applyToMember writes one member's part of a finish or reset as one
// conditional write (Manager.advanceFrom: decided again on conflicts with
// the workers). With carry set, the deliveries it returns for the
// member's action are written with it (a write of the member's fields
// alone when its action needs none); carried reports that they were.
func (m *Manager) applyToMember(ctx context.Context, c identity.Caller, in container.Instance, policy config.CleanupPolicy, why, requestID string,
	carry func(container.MemberAction) ([]container.OutboxItem, error)) (act container.MemberAction, carried bool, err error) {
	_, err = m.advanceFrom(ctx, in, func(in container.Instance) (*store.TransitionParams, error) {
		var p *store.TransitionParams
		p, act = memberWrite(ctx, c, in, policy, why, requestID, m.now().UTC())
		if carry == nil {
			return p, nil
		}
		ds, err := carry(act)
		if err != nil {
			return nil, err
		}
		if p == nil && len(ds) == 0 {
			return nil, nil
		}
		if p == nil {
			p = &store.TransitionParams{To: in.Status}
		}
		p.Deliveries = append(p.Deliveries, ds...)
		return p, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		act.Action = container.ActionAlreadyDeleting
		return act, false, nil
	}
	return act, err == nil && carry != nil, err
}

// memberWrite decides one member's part of a finish or reset: the write to
// make (nil: none) and what it does to the member.
func memberWrite(ctx context.Context, c identity.Caller, in container.Instance, policy config.CleanupPolicy, why, requestID string,
	now time.Time) (*store.TransitionParams, container.MemberAction) {
	act := container.MemberAction{ID: in.ID, Name: in.Name, Status: in.Status}
	op, hasOp := groupOp(policy)
	switch {
	case in.Status == fsm.DeletePending || in.Status == fsm.Deleting:
		act.Action = container.ActionAlreadyDeleting
		return nil, act
	case in.Status == fsm.Pending && policy == config.CleanupDelete:
		// Queued: its create item is already out; delete_pending makes
		// the create worker let it go and the delete worker finish it.
		act.Action = container.ActionDeleteRequested
		p, _ := requestWrite(ctx, in, request{op: container.OpDelete, to: fsm.DeletePending, event: container.EventDeleteRequested,
			reason: why, actor: c.Actor(), requestID: requestID, at: now})
		return p, act
	case in.Status == fsm.Pending:
		act.Action = container.ActionCancelled
		return cancelWrite(in, "cancelled before it was created: "+why, c.User, now), act
	case !hasOp:
		act.Action = container.ActionNone
		return nil, act
	case in.Status == fsm.Stopped && op == container.OpGroupStop:
		act.Action = container.ActionAlreadyStopped
		return nil, act
	default:
		// The member stays as it is (status_reason too) until a worker
		// carries out the policy.
		act.Action = container.ActionCleanupRequested
		p, _ := requestWrite(ctx, in, request{op: op, to: in.Status, event: container.EventCleanupRequested,
			message: why, actor: c.Actor(), requestID: requestID, at: now})
		return p, act
	}
}
