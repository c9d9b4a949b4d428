package manager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
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
	if len(subs) == 0 && !n.m.eventBus {
		return n.Store.Transition(ctx, p)
	}
	p.Deliveries = append([]container.OutboxItem(nil), p.Deliveries...)
	if n.m.eventBus {
		p.Deliveries = append(p.Deliveries, container.OutboxItem{
			ID: container.NewID(), InstanceID: p.ID, Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: container.EventBusTarget, From: p.From, To: p.To},
		})
	}
	if len(subs) == 0 {
		return n.Store.Transition(ctx, p)
	}
	// Owner, template and group never change: the instance as read now
	// says which subscriptions match; the store's own condition still
	// guards the write.
	inst, err := n.Store.GetInstance(ctx, p.ID)
	if err != nil {
		return container.Instance{}, err
	}
	for _, w := range subs {
		if !w.Matches(inst, p.To) {
			continue
		}
		p.Deliveries = append(p.Deliveries, container.OutboxItem{
			ID: container.NewID(), InstanceID: p.ID, Op: container.OpDeliver,
			Delivery: &container.Delivery{WebhookID: w.ID, From: p.From, To: p.To},
		})
	}
	return n.Store.Transition(ctx, p)
}
