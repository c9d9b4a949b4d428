package webhook

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// DefaultTimeout bounds one delivery, connection to the last byte of the
// answer: a receiver that answers later has failed that attempt, whatever
// it answers.
const DefaultTimeout = 15 * time.Second

// ErrRedirect is a receiver that answered with a redirect: it is never
// followed (its target has not been checked, and a redirect to an address
// the deployment does not allow is the classic way around such a check),
// and the attempt failed.
var ErrRedirect = errors.New("webhook receiver answered with a redirect; redirects are not followed")

// NewClient returns the HTTP client deliveries go through: every
// connection's address checked by g (after resolution, so no name can
// lead it elsewhere), no proxy from the environment (a proxy would make
// the check moot), no redirect followed, and timeout (DefaultTimeout when
// zero or less) over each request.
func NewClient(g Guard, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: timeout, Control: g.Control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return ErrRedirect },
	}
}
