package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// QuotaFields are limits (0: no limit) or a use: counts, CPUs a number of
// cores, Memory bytes with an optional suffix ("8Gi").
type QuotaFields struct {
	Instances int64       `json:"instances"`
	Running   int64       `json:"running"`
	Pending   int64       `json:"pending"`
	CPUs      json.Number `json:"cpus,omitempty"`
	Memory    string      `json:"memory,omitempty"`
}

// QuotaOverride is an admin's limits for one user or team (Kind "user" or
// "team").
type QuotaOverride struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	QuotaFields
	UpdatedAt time.Time `json:"updated_at"`
}

// QuotaList is GET /api/quotas: the deployment's default and every override.
type QuotaList struct {
	Default QuotaFields     `json:"default"`
	Items   []QuotaOverride `json:"items"`
}

// QuotaStanding is one subject's limits in effect (Override: an
// override's, else the default) and use.
type QuotaStanding struct {
	Name     string      `json:"name"`
	Limits   QuotaFields `json:"limits"`
	Override bool        `json:"override"`
	Used     QuotaFields `json:"used"`
}

// MyQuotas is GET /api/quotas/me: the caller's standing and, with a team,
// the team's.
type MyQuotas struct {
	User QuotaStanding  `json:"user"`
	Team *QuotaStanding `json:"team,omitempty"`
}

// quotaPath is /api/quotas/users/NAME or /api/quotas/teams/NAME.
func quotaPath(kind, name string) string {
	return "/api/quotas/" + url.PathEscape(kind) + "s/" + url.PathEscape(name)
}

// PutQuota sets the override of kind ("user" or "team") name (admins).
func (c *Client) PutQuota(ctx context.Context, kind, name string, limits QuotaFields) (QuotaOverride, error) {
	body, err := jsonBody(limits)
	if err != nil {
		return QuotaOverride{}, err
	}
	var o QuotaOverride
	_, err = c.do(ctx, request{method: http.MethodPut, path: quotaPath(kind, name), body: body, retry: true}, &o)
	return o, err
}

// GetQuota returns the override of kind name (admins); a 404 when none.
func (c *Client) GetQuota(ctx context.Context, kind, name string) (QuotaOverride, error) {
	var o QuotaOverride
	_, err := c.do(ctx, request{method: http.MethodGet, path: quotaPath(kind, name), retry: true}, &o)
	return o, err
}

// DeleteQuota removes the override of kind name (admins).
func (c *Client) DeleteQuota(ctx context.Context, kind, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: quotaPath(kind, name), retry: true}, nil)
	return err
}

// ListQuotas returns the default and every override (admins).
func (c *Client) ListQuotas(ctx context.Context) (QuotaList, error) {
	var l QuotaList
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/quotas", retry: true}, &l)
	return l, err
}

// MyQuotas returns the caller's limits and use, and their team's.
func (c *Client) MyQuotas(ctx context.Context) (MyQuotas, error) {
	var m MyQuotas
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/quotas/me", retry: true}, &m)
	return m, err
}
