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
