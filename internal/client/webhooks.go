package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Webhook is a webhook subscription as the API shows it. Secret is set
// only on the answer to CreateWebhook.
type Webhook struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	AllOwners bool      `json:"all_owners"`
	URL       string    `json:"url"`
	Template  string    `json:"template,omitempty"`
	Group     string    `json:"group,omitempty"`
	Statuses  []string  `json:"statuses"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

// WebhookRequest is the body of a create: the receiver and optional filters.
type WebhookRequest struct {
	URL      string   `json:"url"`
	Template string   `json:"template,omitempty"`
	Group    string   `json:"group,omitempty"`
	Statuses []string `json:"statuses,omitempty"`
}

// CreateWebhook subscribes a URL; the answer carries the secret, once.
// Not retried: a retry after a lost answer would make a second subscription.
func (c *Client) CreateWebhook(ctx context.Context, req WebhookRequest) (Webhook, error) {
	body, err := jsonBody(req)
	if err != nil {
		return Webhook{}, err
	}
	var w Webhook
	_, err = c.do(ctx, request{method: http.MethodPost, path: "/api/webhooks", body: body}, &w)
	return w, err
}

// ListWebhooks returns the caller's subscriptions (an admin's: everyone's).
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var page Page[Webhook]
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/webhooks", retry: true}, &page)
	return page.Items, err
}

// GetWebhook returns one subscription, without its secret.
func (c *Client) GetWebhook(ctx context.Context, id string) (Webhook, error) {
	var w Webhook
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/webhooks/" + url.PathEscape(id), retry: true}, &w)
	return w, err
}

// DeleteWebhook ends a subscription.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/api/webhooks/" + url.PathEscape(id), retry: true}, nil)
	return err
}

// Delivery is one webhook delivery as the API shows it: the change it
// reports and how its sending went (Status pending, delivered or failed).
type Delivery struct {
	// ID is the webhook-id header of every attempt, redeliveries included.
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	// Type is the payload's type: container.created,
	// container.status_changed, container.deleted or group.finished.
	Type string `json:"type"`
	// Group names the group of a group.finished delivery.
	Group      string    `json:"group,omitempty"`
	InstanceID string    `json:"instance_id"`
	Seq        int64     `json:"seq"`
	From       string    `json:"from"`
	To         string    `json:"to"`
	Status     string    `json:"status"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func deliveriesPath(webhookID string) string {
	return "/api/webhooks/" + url.PathEscape(webhookID) + "/deliveries"
}

// Deliveries returns a page of a subscription's deliveries, newest first;
// cursor is the previous page's NextCursor ("" for the first), limit 0
// the server's default.
func (c *Client) Deliveries(ctx context.Context, webhookID, cursor string, limit int) (Page[Delivery], error) {
	q := pageQuery(url.Values{}, cursor, limit)
	var p Page[Delivery]
	_, err := c.do(ctx, request{method: http.MethodGet, path: deliveriesPath(webhookID), query: q, retry: true}, &p)
	return p, err
}

// Redeliver sends one delivery again under its webhook-id. Retried: a
// repeat of a redelivery not yet sent asks for nothing more.
func (c *Client) Redeliver(ctx context.Context, webhookID, deliveryID string) (Delivery, error) {
	var d Delivery
	_, err := c.do(ctx, request{method: http.MethodPost,
		path: deliveriesPath(webhookID) + "/" + url.PathEscape(deliveryID) + "/redeliver", retry: true}, &d)
	return d, err
}
