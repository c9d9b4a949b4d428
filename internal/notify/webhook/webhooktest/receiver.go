// Package webhooktest provides a real HTTP webhook receiver for tests. It
// verifies every request with the Standard Webhooks reference library, not
// with berth's own signing code, so that a test shows what any receiver
// would accept, and keeps what arrived.
package webhooktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/berth-io/berth/internal/notify/webhook"
)

// Request is one verified request the Receiver kept.
type Request struct {
	// Path is the URL path the delivery was sent to: tests tell
	// subscriptions apart by it.
	Path string
	// ID is the webhook-id header: the same on every attempt of one
	// delivery.
	ID string
	// Type is the payload's event type (webhook.EventStatusChanged, say).
	Type string
	// Change is the status change a container event reports; zero for a
	// group finish.
	Change webhook.Change
	// Group is the finish a webhook.EventGroupFinished reports; nil for
	// any other type.
	Group *webhook.GroupFinished
	// Body is the request body as it arrived.
	Body []byte
}

// Receiver is an HTTP server on 127.0.0.1 that accepts only requests
// whose signature the reference library verifies under the secret set for
// their path. A refused request fails the test and is answered 401; a
// verified one is kept, signalled on Arrived, and answered with the code
// set by Answer. A Receiver is safe for concurrent use.
type Receiver struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string

	srv     *httptest.Server
	code    atomic.Int32
	arrived chan struct{}

	mu      sync.Mutex
	secrets map[string]string
	got     []Request
}

// NewReceiver starts a Receiver answering 204, closed when t ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{secrets: map[string]string{}, arrived: make(chan struct{}, 1)}
	r.code.Store(http.StatusNoContent)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.serve(t, w, req)
	}))
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

// SetSecret sets the secret (whsec_…) that requests to path are verified
// with; path "" sets the one for every path without its own.
func (r *Receiver) SetSecret(path, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[path] = secret
}

// Answer sets the status code verified requests get from now on. A 3xx
// redirects to the instance metadata address, which a sender must not
// follow.
func (r *Receiver) Answer(code int) { r.code.Store(int32(code)) }

// Received returns the verified requests so far, in arrival order.
func (r *Receiver) Received() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.got...)
}

// Arrived is signalled, without blocking, after each verified request is
// kept: a test waits on it and then reads Received.
func (r *Receiver) Arrived() <-chan struct{} { return r.arrived }

func (r *Receiver) serve(t testing.TB, w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	secret, ok := r.secrets[req.URL.Path]
	if !ok {
		secret = r.secrets[""]
	}
	r.mu.Unlock()
	v, err := standardwebhooks.NewWebhook(secret)
	if err == nil {
		err = v.Verify(body, req.Header)
	}
	if err != nil {
		t.Errorf("receiver %s: the signature does not verify: %v", req.URL.Path, err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	got := Request{Path: req.URL.Path, ID: req.Header.Get(webhook.HeaderID), Body: body}
	if err := decode(body, &got); err != nil {
		t.Errorf("receiver %s: %v: %s", req.URL.Path, err, body)
	}
	r.mu.Lock()
	r.got = append(r.got, got)
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	if c := int(r.code.Load()); c >= 300 && c < 400 {
		http.Redirect(w, req, "http://169.254.169.254/latest/meta-data/", c)
		return
	}
	w.WriteHeader(int(r.code.Load()))
}

// decode fills into's Type and its Change or Group from a payload body.
func decode(body []byte, into *Request) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return err
	}
	into.Type = head.Type
	if head.Type == webhook.EventGroupFinished {
		var p webhook.GroupPayload
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		into.Group = &p.Data
		return nil
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		return err
	}
	into.Change = p.Data
	return nil
}
