package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FieldError is one invalid input value of a 400 or 422.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem is the API's application/problem+json document (RFC 9457) with
// berth's extensions.
type Problem struct {
	Type              string       `json:"type"`
	Title             string       `json:"title"`
	Status            int          `json:"status"`
	Detail            string       `json:"detail,omitempty"`
	Instance          string       `json:"instance,omitempty"`
	CurrentStatus     string       `json:"current_status,omitempty"`
	RetryAfterSeconds int          `json:"retry_after_seconds,omitempty"`
	Errors            []FieldError `json:"errors,omitempty"`
	// Quota names the limit a quota-exceeded problem refused (instances,
	// running, pending, cpus, memory), Scope and Subject whose ("user"
	// alice, "team" data), Limit and Used the amounts (cpus in cores,
	// memory in bytes).
	Quota   string      `json:"quota,omitempty"`
	Scope   string      `json:"scope,omitempty"`
	Subject string      `json:"subject,omitempty"`
	Limit   json.Number `json:"limit,omitempty"`
	Used    json.Number `json:"used,omitempty"`
}

// QuotaExceeded reports a refusal over a quota (429, problem type
// …/quota-exceeded).
func (e *Error) QuotaExceeded() bool {
	return e.Status == http.StatusTooManyRequests && strings.HasSuffix(e.Problem.Type, "/quota-exceeded")
}

// Error is an answer of the API outside 2xx.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Problem is the problem document; for an answer that had none (a
	// gateway's own error) it is filled from the status and the body.
	Problem Problem
	// RequestID is the answer's X-Request-Id, for the server's logs.
	RequestID string
	// RetryAfter is what the answer asked the client to wait (Retry-After,
	// else retry_after_seconds); 0 if it asked nothing.
	RetryAfter time.Duration
	// Attempts counts the requests made, retries included.
	Attempts int
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, e.title())
	if e.Problem.Detail != "" {
		b.WriteString(": " + e.Problem.Detail)
	}
	for _, f := range e.Problem.Errors {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *Error) title() string {
	if e.Problem.Title != "" {
		return e.Problem.Title
	}
	if t := http.StatusText(e.Status); t != "" {
		return t
	}
	return "HTTP " + strconv.Itoa(e.Status)
}

// Title is the problem's title, or the status text when it has none.
func (e *Error) Title() string { return e.title() }

// StatusCode returns the HTTP status of an *Error in err's chain, or 0.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports a 404: no such container or template (or another
// user's container).
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict reports a 409: the operation is not allowed from the current
// status (Problem.CurrentStatus says which).
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// IsTimeout reports a 408: a wait that ran out of time.
func IsTimeout(err error) bool { return StatusCode(err) == http.StatusRequestTimeout }

// parseError builds an *Error from a non-2xx answer. A problem document is
// used as it is; API Gateway's own answers ({"message": "..."}) and other
// bodies become a problem with the status text as title.
func parseError(status int, h http.Header, body []byte) *Error {
	e := &Error{Status: status, RequestID: h.Get("X-Request-Id")}
	if id := h.Get("Apigw-Requestid"); e.RequestID == "" && id != "" {
		e.RequestID = id
	}
	ct, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	parsed := false
	if ct == "application/problem+json" || ct == "application/json" {
		var p Problem
		if err := json.Unmarshal(body, &p); err == nil && p.Title != "" {
			e.Problem, parsed = p, true
		} else {
			var gw struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(body, &gw) == nil && gw.Message != "" {
				e.Problem.Detail = gw.Message
			}
		}
	}
	if !parsed {
		e.Problem.Title = http.StatusText(status)
		if e.Problem.Detail == "" && ct == "text/plain" {
			e.Problem.Detail = strings.TrimSpace(string(body[:min(len(body), 512)]))
		}
	}
	if e.Problem.Status == 0 {
		e.Problem.Status = status
	}
	e.RetryAfter = parseRetryAfter(h.Get("Retry-After"), time.Now())
	if e.RetryAfter == 0 && e.Problem.RetryAfterSeconds > 0 {
		e.RetryAfter = time.Duration(e.Problem.RetryAfterSeconds) * time.Second
	}
	return e
}

// parseRetryAfter reads Retry-After: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		n = min(n, 24*3600) // no overflow; callers cap it far lower anyway
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
