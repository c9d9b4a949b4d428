package testenv

import (
	"context"
	"testing"
	"time"
)

// Context returns a context that ends after d or when the test ends,
// whichever is first: a bound on one step that talks to a real part.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
