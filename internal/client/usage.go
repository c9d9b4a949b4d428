package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// UsageQuery is GET /api/usage's parameters; zero fields are left out
// (the API's defaults: the last 30 days to the next whole hour, by day,
// the caller's own usage).
type UsageQuery struct {
	From, To time.Time
	// GroupBy is owner, team, template or day.
	GroupBy string
	// Owner or Team: another user's or a team's usage (admins).
	Owner, Team string
}

// UsageItem is one row of a usage answer.
type UsageItem struct {
	Key              string  `json:"key"`
	RunningSeconds   int64   `json:"running_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds"`
	Creates          int64   `json:"creates"`
	Failures         int64   `json:"failures"`
}

// Usage is GET /api/usage's answer.
type Usage struct {
	From    time.Time   `json:"from"`
	To      time.Time   `json:"to"`
	GroupBy string      `json:"group_by"`
	Items   []UsageItem `json:"items"`
}

// Usage reads the usage q asks for.
func (c *Client) Usage(ctx context.Context, q UsageQuery) (Usage, error) {
	v := url.Values{}
	if !q.From.IsZero() {
		v.Set("from", q.From.UTC().Format(time.RFC3339))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.UTC().Format(time.RFC3339))
	}
	for k, s := range map[string]string{"group_by": q.GroupBy, "owner": q.Owner, "team": q.Team} {
		if s != "" {
			v.Set(k, s)
		}
	}
	path := "/api/usage"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var u Usage
	_, err := c.do(ctx, request{method: http.MethodGet, path: path, retry: true}, &u)
	return u, err
}
