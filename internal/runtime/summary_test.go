package runtime_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berth-io/berth/internal/runtime"
)

// TestSummary: a runtime error's summary keeps its operation, instance,
// node and kind, and drops the cause's text, wherever the error is wrapped.
func TestSummary(t *testing.T) {
	cause := errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"runtime error", runtime.NewError(runtime.ErrUnavailable, "create", "i1", "h1", cause), "create instance i1 on h1: unavailable"},
		{"wrapped", fmt.Errorf("placing: %w", runtime.NewError(runtime.ErrUnavailable, "place", "", "", cause)), "place: unavailable"},
		{"unclassified", cause, "the runtime could not be reached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := runtime.Summary(c.err); got != c.want {
				t.Fatalf("Summary = %q, want %q", got, c.want)
			}
		})
	}
}
