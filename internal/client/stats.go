package client

import (
	"context"
	"net/http"

	"github.com/berth-io/berth/internal/runtime"
)

// Stats is GET /api/containers/{id}/stats's answer: what a running
// container uses now (docs/api.md, Stats).
type Stats = runtime.Stats

// NetworkStats is Stats' network part.
type NetworkStats = runtime.NetworkStats

// BlockIOStats is Stats' block I/O part.
type BlockIOStats = runtime.BlockIOStats

// ContainerStats reads what a running container uses now.
func (c *Client) ContainerStats(ctx context.Context, id string) (Stats, error) {
	var s Stats
	_, err := c.do(ctx, request{method: http.MethodGet, path: containerPath(id) + "/stats", retry: true}, &s)
	return s, err
}
