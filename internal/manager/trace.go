package manager

import "context"

type traceKey struct{}

// WithTrace returns ctx carrying a trace context (a W3C traceparent or an
// X-Ray trace header) that the outbox items written under it carry to the
// workers, so one trace spans the request and its background work.
func WithTrace(ctx context.Context, trace string) context.Context {
	if trace == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, trace)
}

func traceFrom(ctx context.Context) string {
	t, _ := ctx.Value(traceKey{}).(string)
	return t
}
