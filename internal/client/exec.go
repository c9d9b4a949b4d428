package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ExecRequest is POST /api/containers/{id}/exec's body (docs/api.md,
// Exec).
type ExecRequest struct {
	Command []string          `json:"command"`
	Stdin   *string           `json:"stdin,omitempty"`
	Timeout string            `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// ExecResult is its answer: the command's exit code (nil when it timed
// out and was killed) and its two streams, each bounded by the server.
type ExecResult struct {
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
}

// Exec runs one command in a running container and returns once it has
// ended. It is never repeated after a 429 or 503: a command is not
// idempotent, so the caller decides whether to run it again.
func (c *Client) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ExecResult{}, fmt.Errorf("encoding the exec: %w", err)
	}
	// The answer comes once the command ended: the exchange may last its
	// timeout, and the kill after it.
	wait := 10 * time.Second
	if d, err := time.ParseDuration(req.Timeout); err == nil && d > 0 {
		wait = d
	}
	var out ExecResult
	_, err = c.do(ctx, request{method: http.MethodPost, path: containerPath(id) + "/exec", body: body, timeout: wait + 30*time.Second}, &out)
	return out, err
}
