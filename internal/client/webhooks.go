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
