package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The pace of a polled follow (FollowLogs behind API Gateway).
const (
	// DefaultLogsPollWait is the wait before the next poll after one that
	// brought lines. Defaults to 1 s: a chatty container costs one
	// request (on AWS one invocation of the logs function) a second.
	DefaultLogsPollWait = time.Second
	// DefaultLogsPollMaxWait bounds the wait between polls of a container that
	// prints nothing: the wait doubles after each empty poll up to it.
	// Defaults to 10 s.
	DefaultLogsPollMaxWait = 10 * time.Second
	// maxFollowRetryAfter bounds what one Retry-After makes a follow wait.
	maxFollowRetryAfter = time.Minute
)

// The values of Berth-Follow (httpapi.LogsFollowPoll, LogsFollowEnded).
const (
	followPoll  = "poll"
	followEnded = "ended"
)

// WithLogsPoll sets the pace of a polled follow: minWait after a poll that
// brought lines, doubling after each empty one up to maxWait. Defaults:
// DefaultLogsPollWait, DefaultLogsPollMaxWait.
func WithLogsPoll(minWait, maxWait time.Duration) Option {
	return func(c *Client) {
		if minWait > 0 {
			c.pollWait = minWait
		}
		if maxWait > 0 {
			c.pollMaxWait = maxWait
		}
	}
}

// FollowLogs copies what a container prints to w until it has ended and
// every line is out, or ctx is done (a normal end: nil). berth serve
// streams a follow, and FollowLogs reads that one answer to its end.
// Behind API Gateway the API answers Berth-Follow: poll with a
// Berth-Next-Since cursor instead, and FollowLogs asks again from the
// cursor, so each line comes once: after a poll that brought lines it
// waits the minimum, after empty ones twice as long each time up to the
// maximum (WithLogsPoll), and never less than a Retry-After asks. It stops
// at Berth-Follow: ended, or when the container is gone once followed (404,
// 409). A 429 or 503 is asked again after its Retry-After (else the poll's
// wait), up to the client's retry count (WithRetry) in a row.
func (c *Client) FollowLogs(ctx context.Context, id string, o LogsOptions, w io.Writer) error {
	o.Follow = true
	var (
		wait     time.Duration
		polled   bool
		failures int
	)
	for {
		a, err := c.logsOnce(ctx, id, o, w)
		if left(ctx) {
			return nil // the reader left (Ctrl-C): whatever the exchange's error, a normal end
		}
		var e *Error
		switch {
		case err == nil:
			failures = 0
		case errors.As(err, &e) && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) &&
			failures < c.maxRetries:
			failures++
			e.Attempts = failures
			wait = c.nextPollWait(wait, false, e.RetryAfter)
			if !c.pause(ctx, wait) {
				return nil
			}
			continue
		case polled && errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusConflict):
			// Deleted, or removed from its runtime, while followed: it has
			// ended, and what it printed went with it.
			return nil
		default:
			return err
		}
		switch a.follow {
		case "":
			return nil // streamed: it ended with the container
		case followEnded:
			return nil
		case followPoll:
		default:
			return fmt.Errorf("GET %s/logs: Berth-Follow %q is neither poll nor ended", containerPath(id), a.follow)
		}
		if a.next == "" {
			return fmt.Errorf("GET %s/logs: a polled follow without Berth-Next-Since", containerPath(id))
		}
		polled = true
		o.Since, o.Tail = a.next, 0 // the tail, if any, was the first answer's
		wait = c.nextPollWait(wait, a.wrote > 0, a.retryAfter)
		if !c.pause(ctx, wait) {
			return nil
		}
	}
}

// left reports that the follow's reader has gone (ctx is done).
func left(ctx context.Context) bool { return ctx.Err() != nil }

// pause waits d between polls; false when the reader left meanwhile.
func (c *Client) pause(ctx context.Context, d time.Duration) bool { return c.sleep(ctx, d) == nil }

// nextPollWait is the wait before the next poll: the minimum after lines
// (and at first), double the last wait after an empty poll up to the
// maximum, and at least what a Retry-After asked (up to a minute).
func (c *Client) nextPollWait(last time.Duration, gotLines bool, retryAfter time.Duration) time.Duration {
	next := c.pollWait
	if !gotLines && last > 0 {
		next = min(max(2*last, c.pollWait), c.pollMaxWait)
	}
	return max(next, min(retryAfter, maxFollowRetryAfter))
}
