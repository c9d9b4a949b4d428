package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// CreateRequest is the body of POST /api/containers.
type CreateRequest struct {
	Template string            `json:"template"`
	Name     string            `json:"name,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Group    string            `json:"group,omitempty"`
	// Lifetime asks for a lifetime other than the template's default (a
	// duration, at most the template's max).
	Lifetime string `json:"lifetime,omitempty"`
}

// ListOptions filter GET /api/containers. Zero values mean no filter.
type ListOptions struct {
	// Status keeps instances in any of these statuses.
	Status   []string
	Template string
	Group    string
	// Labels keeps instances having every one of these labels.
	Labels map[string]string
	// Owner lists another user's containers (admins only).
	Owner string
	// Limit is the page size, 1..100 (0: the server's default, 50).
	Limit int
	// Cursor continues a listing from a previous page's NextCursor.
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	for _, s := range o.Status {
		q.Add("status", s)
	}
	if o.Template != "" {
		q.Set("template", o.Template)
	}
	if o.Group != "" {
		q.Set("group", o.Group)
	}
	keys := make([]string, 0, len(o.Labels))
	for k := range o.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q.Add("label", k+"="+o.Labels[k])
	}
	if o.Owner != "" {
		q.Set("owner", o.Owner)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// pageQuery adds a listing's page to q: the cursor ("" for the first
// page) and the limit (0 for the server's default).
func pageQuery(q url.Values, cursor string, limit int) url.Values {
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

func containerPath(id string) string { return "/api/containers/" + url.PathEscape(id) }

// CreateContainer asks for a container (202, status pending). The
// Idempotency-Key makes a repeat of the same request return the first
// answer; when idempotencyKey is empty one is generated, so that the
// client's own retries after a 429 or 503 are safe.
func (c *Client) CreateContainer(ctx context.Context, req CreateRequest, idempotencyKey string) (Instance, error) {
	if idempotencyKey == "" {
		idempotencyKey = NewIdempotencyKey()
	}
	body, err := jsonBody(req)
	if err != nil {
		return Instance{}, err
	}
	var in Instance
	_, err = c.do(ctx, request{method: http.MethodPost, path: "/api/containers", body: body,
		header: http.Header{"Idempotency-Key": {idempotencyKey}}, retry: true}, &in)
	return in, err
}

// GetContainer returns one container.
func (c *Client) GetContainer(ctx context.Context, id string) (Instance, error) {
	var in Instance
	_, err := c.do(ctx, request{method: http.MethodGet, path: containerPath(id), retry: true}, &in)
	return in, err
}

// ListContainers returns one page of the caller's containers (an admin's:
// everyone's), oldest first.
func (c *Client) ListContainers(ctx context.Context, opts ListOptions) (Page[Instance], error) {
	var p Page[Instance]
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/containers", query: opts.query(), retry: true}, &p)
	return p, err
}

// ListAllContainers follows next_cursor from opts.Cursor to the last page.
func (c *Client) ListAllContainers(ctx context.Context, opts ListOptions) ([]Instance, error) {
	var all []Instance
	seen := map[string]bool{}
	for {
		p, err := c.ListContainers(ctx, opts)
		if err != nil {
			return all, err
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all, nil
		}
		if seen[p.NextCursor] {
			return all, errors.New("the server repeated a page cursor; stopping")
		}
		seen[p.NextCursor] = true
		opts.Cursor = p.NextCursor
	}
}

func ifMatchHeader(v string) http.Header {
	if v == "" {
		return nil
	}
	return http.Header{"If-Match": {v}}
}

// lifecycle posts start or stop, or deletes. The server treats a repeat as
// a no-op (stop of a stopping container, delete of a deleting one), so
// these are retried after 429 and 503 like reads.
func (c *Client) lifecycle(ctx context.Context, method, path, ifMatch string) (Instance, error) {
	var in Instance
	_, err := c.do(ctx, request{method: method, path: path, header: ifMatchHeader(ifMatch), retry: true}, &in)
	return in, err
}

// StartContainer asks for a stopped (or running: restart) container to
// start. ifMatch, if not empty, is the version (ETag) the caller last saw: a
// stale one is a 412.
func (c *Client) StartContainer(ctx context.Context, id, ifMatch string) (Instance, error) {
	return c.lifecycle(ctx, http.MethodPost, containerPath(id)+"/start", ifMatch)
}

// StopContainer asks for a container to stop; an already stopped or failed
// one is returned unchanged.
func (c *Client) StopContainer(ctx context.Context, id, ifMatch string) (Instance, error) {
	return c.lifecycle(ctx, http.MethodPost, containerPath(id)+"/stop", ifMatch)
}

// DeleteContainer asks for a container to be removed.
func (c *Client) DeleteContainer(ctx context.Context, id, ifMatch string) (Instance, error) {
	return c.lifecycle(ctx, http.MethodDelete, containerPath(id), ifMatch)
}

// Events returns one page of a container's history, oldest first (limit 0:
// the server's default).
func (c *Client) Events(ctx context.Context, id, cursor string, limit int) (Page[Event], error) {
	q := pageQuery(url.Values{}, cursor, limit)
	var p Page[Event]
	_, err := c.do(ctx, request{method: http.MethodGet, path: containerPath(id) + "/events", query: q, retry: true}, &p)
	return p, err
}

// Wait returns the container once it has status, or an *Error: 408 when
// timeout passes first (IsTimeout), 409 when it reached a terminal status
// from which status cannot follow (Problem.CurrentStatus). The server waits
// at most 25 s per request, so longer timeouts take several requests.
func (c *Client) Wait(ctx context.Context, id, status string, timeout time.Duration) (Instance, error) {
	if timeout <= 0 {
		return Instance{}, fmt.Errorf("wait timeout must be positive, not %s", timeout)
	}
	deadline := time.Now().Add(timeout)
	var (
		last      *Error
		lastChunk time.Duration
	)
	for remaining := timeout; ; remaining = time.Until(deadline) {
		// Whole milliseconds, rounded up: the wait never ends early.
		chunk := (min(remaining, c.waitMax) + time.Millisecond - 1).Truncate(time.Millisecond)
		if chunk <= 0 {
			if last == nil {
				return Instance{}, &Error{Status: http.StatusRequestTimeout, Attempts: 1, Problem: Problem{
					Title: "Request Timeout", Status: http.StatusRequestTimeout,
					Detail: fmt.Sprintf("container %s not %s within %s", id, status, timeout)}}
			}
			if lastChunk != timeout {
				// The server's detail speaks of its last wait only.
				last.Problem.Detail = fmt.Sprintf("gave up after %s: %s", timeout, last.Problem.Detail)
			}
			return Instance{}, last
		}
		lastChunk = chunk
		q := url.Values{"status": {status}, "timeout": {chunk.String()}}
		var in Instance
		// The exchange may take the whole chunk: allow that and some.
		_, err := c.do(ctx, request{method: http.MethodGet, path: containerPath(id) + "/wait", query: q,
			retry: true, timeout: chunk + 15*time.Second}, &in)
		if err == nil {
			return in, nil
		}
		if !errors.As(err, &last) || last.Status != http.StatusRequestTimeout {
			return Instance{}, err
		}
	}
}

// ExtendContainer moves a container's expires_at later by by (a duration:
// "10m"); past its lifetime's max it is a 422 naming the limit. Not
// retried: a repeat would extend twice.
func (c *Client) ExtendContainer(ctx context.Context, id, by string) (Instance, error) {
	body, err := jsonBody(map[string]string{"by": by})
	if err != nil {
		return Instance{}, err
	}
	var in Instance
	_, err = c.do(ctx, request{method: http.MethodPost, path: containerPath(id) + "/extend", body: body}, &in)
	return in, err
}
