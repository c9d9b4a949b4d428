package client

import (
	"context"
	"net/http"
	"net/url"
)

func templatePath(name string) string { return "/api/templates/" + url.PathEscape(name) }

// PutTemplate creates or replaces the template name (admins only). tpl is
// a Template, or anything that marshals to one's JSON: a json.RawMessage is
// sent as it is, so the server alone judges a file's fields. created
// reports a new template (201) rather than a replaced one (200).
func (c *Client) PutTemplate(ctx context.Context, name string, tpl any) (t Template, created bool, err error) {
	body, err := jsonBody(tpl)
	if err != nil {
		return Template{}, false, err
	}
	status, err := c.do(ctx, request{method: http.MethodPut, path: templatePath(name), body: body, retry: true}, &t)
	return t, status == http.StatusCreated, err
}

// GetTemplate returns one template.
func (c *Client) GetTemplate(ctx context.Context, name string) (Template, error) {
	var t Template
	_, err := c.do(ctx, request{method: http.MethodGet, path: templatePath(name), retry: true}, &t)
	return t, err
}

// ListTemplates returns every template.
func (c *Client) ListTemplates(ctx context.Context) ([]Template, error) {
	var p Page[Template]
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/templates", retry: true}, &p)
	return p.Items, err
}

// DeleteTemplate removes a template (admins only); containers made from it
// keep their resolved spec.
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: templatePath(name), retry: true}, nil)
	return err
}

// BindLedger returns the bind ledger (admins only).
func (c *Client) BindLedger(ctx context.Context) (BindLedger, error) {
	var l BindLedger
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/bind-ledger", retry: true}, &l)
	return l, err
}

// RetireBind retires one bind ledger entry (admins only), returning it as
// it was.
func (c *Client) RetireBind(ctx context.Context, id string) (BindEntry, error) {
	var e BindEntry
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/api/bind-ledger/" + url.PathEscape(id), retry: true}, &e)
	return e, err
}
