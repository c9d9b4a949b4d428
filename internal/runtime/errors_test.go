package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/runtime"
)

func TestErrorKinds(t *testing.T) {
	cause := errors.New("engine said no")
	tests := []struct {
		name      string
		err       error
		is        error
		retryable bool
	}{
		{"not found", runtime.NewError(runtime.ErrNotFound, "start", "i1", "h1", cause), runtime.ErrNotFound, false},
		{"conflict", runtime.NewError(runtime.ErrConflict, "create", "i1", "h1", cause), runtime.ErrConflict, false},
		{"unavailable", runtime.NewError(runtime.ErrUnavailable, "create", "i1", "h1", cause), runtime.ErrUnavailable, true},
		{"failed", runtime.NewError(runtime.ErrFailed, "create", "i1", "h1", cause), runtime.ErrFailed, true},
		{"invalid", runtime.NewError(runtime.ErrInvalid, "create", "i1", "h1", cause), runtime.ErrInvalid, false},
		{"wrapped again", fmt.Errorf("worker: %w", runtime.NewError(runtime.ErrInvalid, "create", "i1", "", nil)), runtime.ErrInvalid, false},
		{"unclassified", cause, nil, true},
		{"cancelled", context.Canceled, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.is != nil && !errors.Is(tt.err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.is)
			}
			if got := runtime.Retryable(tt.err); got != tt.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.retryable)
			}
		})
	}
}

func TestErrorMessageAndCause(t *testing.T) {
	cause := errors.New("no such image")
	err := runtime.NewError(runtime.ErrInvalid, "create", "01ABC", "host-a", cause)
	if got, want := err.Error(), "create instance 01ABC on host-a: invalid: no such image"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("the cause is not reachable with errors.Is")
	}
	if !runtime.IsInvalid(err) || runtime.IsNotFound(err) || runtime.IsConflict(err) || runtime.IsUnavailable(err) {
		t.Error("Is* helpers disagree with the kind")
	}
	if msg := runtime.Errorf(runtime.ErrNotFound, "start", "", "", "gone").Error(); !strings.HasPrefix(msg, "start: not found") {
		t.Errorf("message without instance and node = %q", msg)
	}
}
