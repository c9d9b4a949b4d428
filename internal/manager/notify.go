package manager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// DefaultWebhookCacheTTL is how long a manager keeps the subscriptions it
// read before it reads them again for the next status change. A
// subscription made through another process (another Lambda instance)
// covers the changes this one writes from at most this long after it was
// made; this process's own creates and deletes refresh the copy at once.
const DefaultWebhookCacheTTL = time.Second

// webhookCache is the last subscription set read, and when.
type webhookCache struct {
	mu   sync.Mutex
	set  []container.Webhook
	read time.Time
	ok   bool
}

func (c *webhookCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok = false
}

// subscriptions returns every subscription, read again when the copy is
// older than DefaultWebhookCacheTTL.
func (m *Manager) subscriptions(ctx context.Context, s store.Store) ([]container.Webhook, error) {
	c := &m.hooks
	c.mu.Lock()
	defer c.mu.Unlock()
	now := m.now()
	if c.ok && now.Sub(c.read) < DefaultWebhookCacheTTL && !now.Before(c.read) {
		return c.set, nil
	}
	set, err := s.ListWebhooks(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading webhook subscriptions: %w", err)
	}
	c.set, c.read, c.ok = set, now, true
	return set, nil
}

// notifying is the manager's store: every status change it writes carries
// a delivery (container.OpDeliver outbox item) for each subscription that
// matches it, in the change's own transaction (store.TransitionParams.
// Deliveries), so no change is reported that did not commit and none that
// committed goes unreported.
type notifying struct {
	store.Store
	m *Manager
}

var _ store.Store = notifying{}

// CreateInstance adds the create's deliveries (from no status to
// pending: webhook.EventCreated) and writes through: a create is the
// first change of every instance, reported like the others, in its own
// transaction.
func (n notifying) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	subs, err := n.m.subscriptions(ctx, n.Store)
	if err != nil {
		return container.Instance{}, err
	}
	inst := p.Instance
	if inst.Status == "" {
		inst.Status = fsm.Pending
	}
	p.Deliveries, err = n.deliveries(ctx, subs, p.Deliveries, inst.ID, &inst, "", inst.Status)
	if err != nil {
		return container.Instance{}, err
	}
	return n.Store.CreateInstance(ctx, p)
}

// Transition adds the matching subscriptions' deliveries, and the event
// bus's when the manager has one (Options.EventBus), to a status change
// (To != From) and writes through.
func (n notifying) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	if p.To == p.From {
		return n.Store.Transition(ctx, p)
	}
	subs, err := n.m.subscriptions(ctx, n.Store)
	if err != nil {
		return container.Instance{}, err
	}
	p.Deliveries, err = n.deliveries(ctx, subs, p.Deliveries, p.ID, nil, p.From, p.To)
	if err != nil {
		return container.Instance{}, err
	}
	return n.Store.Transition(ctx, p)
}

// DeleteInstance adds the removal's deliveries (from the instance's last
// status to none: webhook.EventDeleted) and writes through. A status
// filter of a subscription names statuses, so only subscriptions without
// one match a removal.
func (n notifying) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	subs, err := n.m.subscriptions(ctx, n.Store)
	if err != nil {
		return err
	}
	p.Deliveries, err = n.deliveries(ctx, subs, p.Deliveries, p.ID, nil, p.Event.From, "")
	if err != nil {
		return err
	}
	return n.Store.DeleteInstance(ctx, p)
}

// deliveries returns more with a delivery of the change of an instance
// from → to for the event bus (when the manager has one) and for each of
// subs that matches it. inst is the instance when the caller holds it (a
// create); nil, it is read when a subscription needs it.
func (n notifying) deliveries(ctx context.Context, subs []container.Webhook, more []container.OutboxItem, id string,
	inst *container.Instance, from, to fsm.Status) ([]container.OutboxItem, error) {
	if len(subs) == 0 && !n.m.eventBus {
		return more, nil
	}
	out := append([]container.OutboxItem(nil), more...)
	add := func(webhookID string) {
		out = append(out, container.OutboxItem{ID: container.NewID(), InstanceID: id, Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: webhookID, From: from, To: to}})
	}
	if n.m.eventBus {
		add(container.EventBusTarget)
	}
	if len(subs) == 0 {
		return out, nil
	}
	// Owner, template and group never change: the instance as read now
	// says which subscriptions match; the store's own condition still
	// guards the write.
	if inst == nil {
		got, err := n.Store.GetInstance(ctx, id)
		if err != nil {
			return nil, err
		}
		inst = &got
	}
	for _, w := range subs {
		if w.Matches(*inst, to) {
			add(w.ID)
		}
	}
	return out, nil
}
