package httpapi

import (
	"context"
	"net/http"
	"regexp"

	"github.com/berth-io/berth/internal/container"
)

type requestIDKey struct{}

// RequestIDHeader carries a caller's request id; API Gateway's own id is
// passed in it by functions/api.
const RequestIDHeader = "X-Request-Id"

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:=-]{1,128}$`)

// requestID keeps a well-formed incoming id (so logs join across hops) and
// makes a new one otherwise.
func requestID(r *http.Request) string {
	if id := r.Header.Get(RequestIDHeader); safeRequestID.MatchString(id) {
		return id
	}
	return container.NewID()
}

func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id in ctx.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var safeTrace = regexp.MustCompile(`^[A-Za-z0-9=;:._-]{1,256}$`)

// traceContext is the caller's trace context: a W3C traceparent, else the
// X-Ray header API Gateway adds. Only well-formed values are carried on.
func traceContext(r *http.Request) string {
	for _, h := range []string{"Traceparent", "X-Amzn-Trace-Id"} {
		if v := r.Header.Get(h); safeTrace.MatchString(v) {
			return v
		}
	}
	return ""
}
