package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
)

// ErrWebhookLimit is a subscription past store.MaxWebhooksPerOwner (or the
// deployment's store.MaxWebhooks): 409.
var ErrWebhookLimit = store.ErrWebhookLimit

// Bounds of a subscription's fields.
const (
	// MaxWebhookURL is the longest receiver URL accepted.
	MaxWebhookURL = 2048
	// maxWebhookFilter bounds the template and group filters (a template
	// name or group is shorter still; this only keeps junk out).
	maxWebhookFilter = 256
)

// WebhookRequest is a subscription as its caller asks for it: the
// receiver URL and optional filters (empty ones match everything).
type WebhookRequest struct {
	URL      string
	Template string
	Group    string
	Statuses []fsm.Status
}

// CreateWebhook subscribes the caller to the status changes of their own
// instances (an admin's subscription: every owner's) that match the
// filters. The URL must pass the deployment's address policy
// (Options.Webhooks) now; it is checked again at every delivery. The
// returned subscription carries its secret, which no later read shows.
func (m *Manager) CreateWebhook(ctx context.Context, c identity.Caller, req WebhookRequest) (container.Webhook, error) {
	var f fields
	switch {
	case req.URL == "":
		f.add("url", "is required")
	case len(req.URL) > MaxWebhookURL:
		f.add("url", "must be at most %d bytes", MaxWebhookURL)
	default:
		if err := m.webhooks.CheckURL(ctx, req.URL); err != nil {
			if !errors.Is(err, webhook.ErrRefused) && !errors.Is(err, webhook.ErrInvalidURL) {
				return container.Webhook{}, fmt.Errorf("checking webhook url: %w", err)
			}
			// The answer names the rule only (RefusedError's message); what a
			// name resolved to helps an operator, so it goes to the log.
			if re := (*webhook.RefusedError)(nil); errors.As(err, &re) {
				m.log.InfoContext(ctx, "webhook receiver refused", "user", c.User, "host", re.Host, "rule", re.Rule,
					"address", re.Addr, "cause", re.Cause)
			}
			f.add("url", "%v", err)
		}
	}
	if len(req.Template) > maxWebhookFilter {
		f.add("template", "must be at most %d bytes", maxWebhookFilter)
	}
	if len(req.Group) > maxWebhookFilter {
		f.add("group", "must be at most %d bytes", maxWebhookFilter)
	}
	for i, s := range req.Statuses {
		if !s.Valid() {
			f.add(fmt.Sprintf("statuses[%d]", i), "%q is not a status", s)
		} else if slices.Index(req.Statuses, s) < i {
			f.add(fmt.Sprintf("statuses[%d]", i), "%q is listed twice", s)
		}
	}
	if err := f.err(); err != nil {
		return container.Webhook{}, err
	}
	w, err := m.store.PutWebhook(ctx, container.Webhook{
		ID: container.NewID(), Owner: c.User, AllOwners: c.Admin, URL: req.URL, Secret: webhook.NewSecret(),
		Template: req.Template, Group: req.Group, Statuses: slices.Clone(req.Statuses),
	})
	if err != nil {
		return container.Webhook{}, fmt.Errorf("creating webhook: %w", err)
	}
	m.hooks.invalidate()
	m.log.InfoContext(ctx, "webhook subscribed", "webhook_id", w.ID, "user", c.User, "all_owners", w.AllOwners, "url", w.URL)
	return w, nil
}

// ListWebhooks returns the caller's subscriptions, oldest first; an
// admin's listing holds every owner's.
func (m *Manager) ListWebhooks(ctx context.Context, c identity.Caller) ([]container.Webhook, error) {
	owner := c.User
	if c.Admin {
		owner = ""
	}
	ws, err := m.store.ListWebhooks(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	return ws, nil
}

// GetWebhook returns one subscription; another owner's is ErrNotFound
// unless the caller is an admin.
func (m *Manager) GetWebhook(ctx context.Context, c identity.Caller, id string) (container.Webhook, error) {
	w, err := m.store.GetWebhook(ctx, id)
	if err != nil {
		return container.Webhook{}, fmt.Errorf("reading webhook %s: %w", id, err)
	}
	if !c.Admin && w.Owner != c.User {
		return container.Webhook{}, fmt.Errorf("webhook %s: %w", id, ErrNotFound)
	}
	return w, nil
}

// DeleteWebhook ends a subscription (the caller's own, or any for an
// admin); deliveries already written are still made.
func (m *Manager) DeleteWebhook(ctx context.Context, c identity.Caller, id string) error {
	if _, err := m.GetWebhook(ctx, c, id); err != nil {
		return err
	}
	if err := m.store.DeleteWebhook(ctx, id); err != nil {
		return fmt.Errorf("deleting webhook %s: %w", id, err)
	}
	m.hooks.invalidate()
	m.log.InfoContext(ctx, "webhook deleted", "webhook_id", id, "user", c.User)
	return nil
}
