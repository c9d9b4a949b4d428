package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// The five kinds of failure callers tell apart. Match them with errors.Is.
//
// ErrUnavailable and ErrFailed are both worth retrying, but not alike: an
// unavailable runtime says nothing about the request (it never got to
// judge it), so the request waits for the runtime for as long as it can
// still matter and no attempt is spent; a runtime that answered with a
// failure may be refusing this very request, so its retries are bounded.
var (
	// ErrNotFound: the object (or the node named) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the name is taken by an object that is not this
	// instance's, or the object is in a state that forbids the call.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the runtime or a node could not take the request at
	// all: unreachable, connection refused, timed out, overloaded, full, or
	// failing in itself (an engine 500 that is not about the spec). Retry
	// with backoff without spending an attempt.
	ErrUnavailable = errors.New("unavailable")
	// ErrFailed: a failure that may or may not pass and may be the
	// request's own (one the runtime's client could not type): retry with
	// backoff a bounded number of times.
	ErrFailed = errors.New("failed")
	// ErrInvalid: the request can never succeed as given (a bad spec, an
	// image that is absent under pull policy Never, a bind mount outside
	// the allowed roots): do not retry; fail the instance.
	ErrInvalid = errors.New("invalid")
)

// Error is a runtime failure with its kind and context. Messages carry the
// operation, instance and node, never environment values.
type Error struct {
	Kind     error  // ErrNotFound, ErrConflict, ErrUnavailable, ErrFailed or ErrInvalid
	Op       string // "create", "start", …
	Instance string
	Node     string
	Err      error // the cause
}

// NewError builds an *Error; cause may be nil.
func NewError(kind error, op, instance, node string, cause error) *Error {
	return &Error{Kind: kind, Op: op, Instance: instance, Node: node, Err: cause}
}

// Errorf builds an *Error whose cause is a formatted message (%w allowed).
func Errorf(kind error, op, instance, node, format string, args ...any) *Error {
	return NewError(kind, op, instance, node, fmt.Errorf(format, args...))
}

func (e *Error) Error() string {
	msg := e.Op
	if e.Instance != "" {
		msg += " instance " + e.Instance
	}
	if e.Node != "" {
		msg += " on " + e.Node
	}
	msg += ": " + e.Kind.Error()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes both the kind, for errors.Is(err, ErrInvalid), and the
// cause, for errors.Is/As on what the runtime's client returned.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsConflict reports whether err is ErrConflict.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// IsUnavailable reports whether err is ErrUnavailable.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// IsInvalid reports whether err is ErrInvalid.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

// Retryable reports whether the same call may succeed later: unavailable,
// failed and unclassified errors are; invalid, conflict and not-found are
// not (they need a different request), nor is ErrNotSupported, and neither is a
// cancelled context.
// Only IsUnavailable errors may be retried without bound on attempts.
func Retryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound), errors.Is(err, ErrNotSupported):
		return false
	}
	return true
}

// Unreachable reports whether err says a node could not take a request at
// all, whatever its runtime: no connection (refused, reset, cut short), a
// network error or a deadline. Each runtime adds what its own client types
// (an overloaded engine, an API server's 503); what no rule matches is
// ErrFailed, by the contract above, not ErrUnavailable: an answer the
// client could not read may be this request's own fault.
func Unreachable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
