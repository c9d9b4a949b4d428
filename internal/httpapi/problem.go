package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// Problem is an RFC 9457 problem document with berth's extensions.
type Problem struct {
	Type              string               `json:"type"`
	Title             string               `json:"title"`
	Status            int                  `json:"status"`
	Detail            string               `json:"detail,omitempty"`
	Instance          string               `json:"instance,omitempty"`
	CurrentStatus     fsm.Status           `json:"current_status,omitempty"`
	RetryAfterSeconds int                  `json:"retry_after_seconds,omitempty"`
	Errors            []manager.FieldError `json:"errors,omitempty"`
	// Quota, Scope ("user" or "team"), Subject (its name), Limit and Used
	// describe a refusal over a quota (type …/quota-exceeded).
	Quota   string      `json:"quota,omitempty"`
	Scope   string      `json:"scope,omitempty"`
	Subject string      `json:"subject,omitempty"`
	Limit   json.Number `json:"limit,omitempty"`
	Used    json.Number `json:"used,omitempty"`
	// Runtime names the runtime that cannot carry out the operation asked
	// (a pause on Kubernetes).
	Runtime string `json:"runtime,omitempty"`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// problemTypeBase prefixes problem types; each status has its own type.
const problemTypeBase = "https://berth.dev/problems/"

func writeProblem(w http.ResponseWriter, r *http.Request, status int, title, detail string, extend func(*Problem)) {
	p := Problem{Type: problemTypeBase + strconv.Itoa(status), Title: title, Status: status, Detail: detail, Instance: r.URL.Path}
	if extend != nil {
		extend(&p)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// badRequest is a malformed request (400), with optional field errors.
type badRequest struct {
	msg    string
	fields []manager.FieldError
}

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

// tooLarge is a body over the limit (413).
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("request body is larger than %d bytes", e.limit)
}

// writeError maps an error to its status. Conditions the caller can cause
// all have their own 4xx; only the unexpected is a 500, and its detail is
// never shown (it may name internals), only the request id.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		br *badRequest
		tl *tooLarge
		ve *manager.ValidationError
		se *manager.StateError
		lp *logsProblem
		qe *store.QuotaError
		ue *manager.UnsupportedError
	)
	retry := int(h.retryAfter.Seconds())
	switch {
	case errors.As(err, &lp):
		if lp.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(retry))
		}
		writeProblem(w, r, lp.status, lp.title, lp.detail, func(p *Problem) {
			switch lp.status {
			case http.StatusConflict:
				p.CurrentStatus = lp.current.Status
			case http.StatusServiceUnavailable:
				p.RetryAfterSeconds = retry
			}
		})
	case errors.As(err, &br):
		writeProblem(w, r, http.StatusBadRequest, "Bad Request", br.msg, func(p *Problem) { p.Errors = br.fields })
	case errors.Is(err, store.ErrInvalidCursor):
		writeProblem(w, r, http.StatusBadRequest, "Bad Request", "cursor is not valid for this listing", func(p *Problem) {
			p.Errors = fieldErr("cursor", "not valid for this listing")
		})
	case errors.As(err, &tl):
		writeProblem(w, r, http.StatusRequestEntityTooLarge, "Content Too Large", tl.Error(), nil)
	case errors.As(err, &ve):
		writeProblem(w, r, http.StatusUnprocessableEntity, "Unprocessable Content", ve.Error(), func(p *Problem) { p.Errors = ve.Fields })
	case errors.As(err, &ue):
		writeProblem(w, r, http.StatusConflict, "Conflict", ue.Error(), func(p *Problem) { p.Runtime = ue.Runtime })
	case errors.As(err, &se):
		writeProblem(w, r, http.StatusConflict, "Conflict", se.Error(), func(p *Problem) { p.CurrentStatus = se.Current })
	case errors.Is(err, manager.ErrResetDisabled), errors.Is(err, manager.ErrInUse), errors.Is(err, manager.ErrWebhookLimit),
		errors.Is(err, manager.ErrNoLifetime):
		writeProblem(w, r, http.StatusConflict, "Conflict", err.Error(), nil)
	case errors.Is(err, manager.ErrNotFound):
		writeProblem(w, r, http.StatusNotFound, "Not Found", err.Error(), nil)
	case errors.Is(err, manager.ErrForbidden):
		writeProblem(w, r, http.StatusForbidden, "Forbidden", err.Error(), nil)
	case errors.Is(err, manager.ErrVersion):
		writeProblem(w, r, http.StatusPreconditionFailed, "Precondition Failed", err.Error(), nil)
	case errors.Is(err, manager.ErrIdempotencyKey):
		writeProblem(w, r, http.StatusUnprocessableEntity, "Unprocessable Content", err.Error(), nil)
	case errors.As(err, &qe):
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeProblem(w, r, http.StatusTooManyRequests, "Too Many Requests", qe.Error(), func(p *Problem) { quotaProblem(p, qe, retry) })
	case errors.Is(err, manager.ErrQueueFull), errors.Is(err, errTooManyWaiters), errors.Is(err, errTooManyFollows):
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeProblem(w, r, http.StatusTooManyRequests, "Too Many Requests", err.Error(), func(p *Problem) { p.RetryAfterSeconds = retry })
	case errors.Is(err, manager.ErrWaitTimeout):
		writeProblem(w, r, http.StatusRequestTimeout, "Request Timeout", err.Error(), nil)
	case errors.Is(err, manager.ErrUnreachable):
		writeProblem(w, r, http.StatusConflict, "Conflict", err.Error(), func(p *Problem) {
			if cs, ok := currentStatus(r.Context()); ok {
				p.CurrentStatus = cs
			}
		})
	case errors.Is(err, manager.ErrNoRuntime):
		// Not the caller's doing: it lasts until an operator configures a
		// runtime, which a retry then finds.
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeProblem(w, r, http.StatusServiceUnavailable, "Service Unavailable", err.Error(), func(p *Problem) { p.RetryAfterSeconds = retry })
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		h.log.WarnContext(r.Context(), "store unavailable", "request_id", RequestIDFrom(r.Context()), "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeProblem(w, r, http.StatusServiceUnavailable, "Service Unavailable", "the store is unavailable; retry later", func(p *Problem) { p.RetryAfterSeconds = retry })
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		writeProblem(w, r, 499, "Client Closed Request", "", nil)
	default:
		h.log.ErrorContext(r.Context(), "request failed", "request_id", RequestIDFrom(r.Context()), "error", err)
		writeProblem(w, r, http.StatusInternalServerError, "Internal Server Error", "request "+RequestIDFrom(r.Context())+" failed", nil)
	}
}

// retrySeconds is a Retry-After value: whole seconds, at least 1.
func retrySeconds(d time.Duration) string { return strconv.Itoa(max(1, int(d.Seconds()))) }

// errTooManyWaiters is a GET /wait beyond Options.MaxWaiters.
var errTooManyWaiters = errors.New("too many GET /wait calls in progress; retry later or poll GET /api/containers/{id}")

type currentStatusKey struct{}

// currentStatus lets Wait pass the status it ended in to the error writer.
func currentStatus(ctx context.Context) (fsm.Status, bool) {
	p, ok := ctx.Value(currentStatusKey{}).(*fsm.Status)
	if !ok || p == nil || *p == "" {
		return "", false
	}
	return *p, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (h *handler) forbidden(msg string) error { return fmtErr{msg, manager.ErrForbidden} }

type fmtErr struct {
	msg string
	err error
}

func (e fmtErr) Error() string { return e.msg }
func (e fmtErr) Unwrap() error { return e.err }
