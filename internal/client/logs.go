package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// LogsOptions select what Logs reads (GET /api/containers/{id}/logs).
type LogsOptions struct {
	// Tail, above zero, reads only the last Tail lines.
	Tail int
	// Since is an RFC 3339 time or a duration ("10m"); empty: from the start.
	Since string
	// Stream is stdout, stderr or both (empty: both).
	Stream string
	// Timestamps starts each line with its time.
	Timestamps bool
	// Follow streams lines until the container ends or ctx is done.
	Follow bool
}

func (o LogsOptions) query() url.Values {
	q := url.Values{}
	if o.Tail > 0 {
		q.Set("tail", strconv.Itoa(o.Tail))
	}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	if o.Stream != "" {
		q.Set("stream", o.Stream)
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	return q
}

// Logs copies what a container printed, as text, to w as it arrives, and
// returns the API's Berth-Next-Since: empty, or the since to ask the rest
// from when the answer was cut at the server's bound, or the cursor of a
// polled follow (Follow behind API Gateway: FollowLogs keeps polling).
// The body is streamed, never held whole; a streamed Follow is bounded by
// ctx only, other reads by the client's request timeout. Logs is one
// exchange and retries nothing.
func (c *Client) Logs(ctx context.Context, id string, o LogsOptions, w io.Writer) (nextSince string, err error) {
	a, err := c.logsOnce(ctx, id, o, w)
	if err != nil {
		return "", err
	}
	return a.next, nil
}

// logsAnswer is what one logs exchange said besides its lines.
type logsAnswer struct {
	// next is Berth-Next-Since (checked to be a time).
	next string
	// follow is Berth-Follow: empty when the follow was streamed, or when
	// the read did not follow.
	follow string
	// wrote counts the bytes of lines copied.
	wrote int64
	// retryAfter is what a 2xx answer's Retry-After asked, if anything.
	retryAfter time.Duration
}

// logsOnce is one GET of the logs route.
func (c *Client) logsOnce(ctx context.Context, id string, o LogsOptions, w io.Writer) (logsAnswer, error) {
	var a logsAnswer
	if !o.Follow && c.reqTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.reqTimeout)
		defer cancel()
	}
	path := containerPath(id) + "/logs"
	target := c.base.String() + path + "?" + o.query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return a, err
	}
	req.Header.Set("Accept", "text/plain, application/problem+json")
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return a, fmt.Errorf("GET %s: %w", c.base.Redacted()+path, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		e := parseError(resp.StatusCode, resp.Header, b)
		e.Attempts = 1
		return a, e
	}
	a.follow = resp.Header.Get("Berth-Follow")
	a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	a.wrote, err = io.Copy(w, resp.Body)
	if err != nil {
		if o.Follow && ctx.Err() != nil {
			return a, nil // the reader left: a follow's normal end
		}
		return a, fmt.Errorf("GET %s: reading the logs: %w", c.base.Redacted()+path, err)
	}
	a.next = resp.Header.Get("Berth-Next-Since")
	if a.next != "" {
		if _, err := time.Parse(time.RFC3339Nano, a.next); err != nil {
			return a, fmt.Errorf("GET %s: Berth-Next-Since %q is not a time", c.base.Redacted()+path, a.next)
		}
	}
	return a, nil
}
