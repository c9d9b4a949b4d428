// Package client is a small Go client of berth's HTTP API (docs: the
// design's api.md). It works against the local server (`berth serve`) and
// against API Gateway alike: the base URL may carry a path prefix such as a
// stage ("https://abc.execute-api.eu-west-1.amazonaws.com/prod").
//
// Errors the API answers are *Error values carrying the problem document.
// 429 and 503 answers are retried a bounded number of times, honouring
// Retry-After; a create is retried only under an Idempotency-Key, which
// CreateContainer generates when the caller gives none, so that a retry can
// never make a second container.
//
// It is written by hand rather than generated from docs/openapi.yaml (from
// which any team can generate a client; cmd/berth's TestGeneratedClient
// does): a generated client maps one call to one exchange, while this one
// retries 429 and 503 after Retry-After, makes creates safe to retry with a
// generated Idempotency-Key, waits past the server's 25 s cap by asking again,
// works below an API Gateway stage prefix, returns the problem document as
// an error, and shares the server's own types (Instance, Template, Event).
// Its tests run against the real handler with every exchange checked
// against the document, so the two cannot disagree.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
)

// The API's resource shapes are the server's own types, so a client and a
// server built from the same tree agree on every field.
type (
	// Instance is one container instance as the API returns it.
	Instance = container.Instance
	// Template is one container template as the API returns it.
	Template = container.Template
	// Event is one entry of an instance's event history.
	Event = container.Event
	// Endpoint is where a running instance's published port answers.
	Endpoint = container.Endpoint
	// BindLedger is GET /api/bind-ledger.
	BindLedger = container.BindLedger
	// BindEntry is one entry of the bind ledger.
	BindEntry = container.BindEntry
	// Group is GET /api/groups/{group}.
	Group = container.Group
	// GroupSummary is one item of GET /api/groups.
	GroupSummary = container.GroupSummary
	// GroupResult is the answer to a group finish or reset.
	GroupResult = container.GroupResult
)

// Version is the client's version, sent in the default User-Agent.
var Version = "dev"

// Client calls one berth API. It is safe for concurrent use.
type Client struct {
	base        *url.URL
	token       string
	hc          *http.Client
	userAgent   string
	maxRetries  int
	maxDelay    time.Duration
	waitMax     time.Duration
	reqTimeout  time.Duration
	pollWait    time.Duration
	pollMaxWait time.Duration
	sleep       func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: a client of its own with
// http.DefaultTransport and no overall timeout; every call has a deadline).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header (default "berth-cli/<Version>").
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetry bounds the retries of 429 and 503 answers: at most maxRetries
// retries (0 disables them), each after the answer's Retry-After (else an
// exponential backoff from 500 ms) capped to maxDelay (0: at once).
// Defaults: 3 retries, 10 s.
func WithRetry(maxRetries int, maxDelay time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.maxDelay = max(maxRetries, 0), max(maxDelay, 0) }
}

// WithWaitMax sets the longest wait one GET /wait asks the server for
// (default config.DefaultWaitMax, the API's maximum); Wait loops for longer
// timeouts.
func WithWaitMax(d time.Duration) Option { return func(c *Client) { c.waitMax = d } }

// WithRequestTimeout bounds each HTTP exchange other than a wait (default 30 s,
// API Gateway's own limit).
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.reqTimeout = d } }

// New returns a client of the API at baseURL (scheme and host, and an
// optional path prefix), authenticating with token when it is not empty.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("invalid base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("invalid base URL %q: no query, fragment or user info allowed", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{
		base: u, token: token, hc: &http.Client{}, userAgent: "berth-cli/" + Version,
		maxRetries: 3, maxDelay: 10 * time.Second, waitMax: config.DefaultWaitMax, reqTimeout: 30 * time.Second,
		pollWait: DefaultLogsPollWait, pollMaxWait: DefaultLogsPollMaxWait, sleep: sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	if c.waitMax <= 0 {
		c.waitMax = config.DefaultWaitMax
	}
	c.pollMaxWait = max(c.pollMaxWait, c.pollWait)
	return c, nil
}

// BaseURL returns the API's base URL as the client uses it.
func (c *Client) BaseURL() string { return c.base.String() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// request is one API call.
type request struct {
	method  string
	path    string // below the base URL, already escaped: "/api/containers/ID"
	query   url.Values
	body    []byte // JSON, or nil
	header  http.Header
	retry   bool          // safe to repeat after a 429 or 503
	timeout time.Duration // for this exchange; 0: the client's default
}

// maxResponse caps what is read of a response body.
const maxResponse = 32 << 20

// do performs r, retrying 429 and 503 when r.retry allows, and decodes a
// 2xx JSON body into out (when out is not nil). It returns the final
// response's status.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	for attempt := 1; ; attempt++ {
		status, hdr, body, err := c.once(ctx, r)
		if err != nil {
			return 0, err
		}
		if status >= 200 && status < 300 {
			if out != nil && status != http.StatusNoContent {
				if err := json.Unmarshal(body, out); err != nil {
					return status, fmt.Errorf("%s %s: decoding the %d answer: %w", r.method, r.path, status, err)
				}
			}
			return status, nil
		}
		e := parseError(status, hdr, body)
		e.Attempts = attempt
		if !r.retry || (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) || attempt > c.maxRetries ||
			e.QuotaExceeded() {
			// Over a quota, waiting seconds rarely helps: the caller
			// decides (stop or delete something, ask an admin).
			return status, e
		}
		delay := e.RetryAfter
		if delay <= 0 {
			delay = 500 * time.Millisecond << min(attempt-1, 10)
		}
		delay = min(delay, c.maxDelay)
		if err := c.sleep(ctx, delay); err != nil {
			return status, e // cancelled while waiting: the API's answer says more than ctx.Err
		}
	}
}

// once performs one HTTP exchange.
func (c *Client) once(ctx context.Context, r request) (int, http.Header, []byte, error) {
	timeout := r.timeout
	if timeout <= 0 {
		timeout = c.reqTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	target := c.base.String() + r.path
	if q := r.query.Encode(); q != "" {
		target += "?" + q
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", r.method, c.base.Redacted()+r.path, unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: reading the answer: %w", r.method, c.base.Redacted()+r.path, err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// unwrapURLError drops *url.Error's repetition of method and URL, which
// the caller's message already has.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func jsonBody(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, errors.New("request body is not valid JSON")
		}
		return raw, nil
	}
	return json.Marshal(v)
}

// NewIdempotencyKey returns a random key for POST /api/containers.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "berth-" + hex.EncodeToString(b[:])
}

// Page is one page of a listing, as the API answers it.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}
