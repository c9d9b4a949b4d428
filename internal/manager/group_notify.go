package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// groupDeliveries returns the deliveries of a group finish (res, as its
// answer shows it) for the event bus (when the manager has one) and for
// each subscription that matches the group (container.Webhook.
// MatchesGroup: the owner's own, or an admin's): container.OpDeliver items
// to be written with a write of member carrier, whose instance they name.
func (m *Manager) groupDeliveries(ctx context.Context, carrier string, res container.GroupResult) ([]container.OutboxItem, error) {
	subs, err := m.subscriptions(ctx, m.store)
	if err != nil {
		return nil, err
	}
	var out []container.OutboxItem
	add := func(webhookID string) {
		g := res
		g.Members = append([]container.MemberAction(nil), res.Members...)
		out = append(out, container.OutboxItem{ID: container.NewID(), InstanceID: carrier, Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: webhookID, Group: &g}})
	}
	if m.eventBus {
		add(container.EventBusTarget)
	}
	for _, w := range subs {
		if w.MatchesGroup(res.Owner, res.Group) {
			add(w.ID)
		}
	}
	return out, nil
}

// carryFinish writes a finish's deliveries with a write of the fields
// alone of the newest of members that still exists, when the finish's
// last member is gone. With none left, the group is gone too, and its
// finish is not notified.
func (m *Manager) carryFinish(ctx context.Context, members []container.Instance, res container.GroupResult) error {
	for i := len(members) - 1; i >= 0; i-- {
		_, err := m.advanceFrom(ctx, members[i], func(in container.Instance) (*store.TransitionParams, error) {
			ds, err := m.groupDeliveries(ctx, in.ID, res)
			if err != nil || len(ds) == 0 {
				return nil, err
			}
			return &store.TransitionParams{To: in.Status, Deliveries: ds}, nil
		})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("notifying the finish with member %s: %w", members[i].ID, err)
		}
		return nil
	}
	return nil
}
