package manager

import (
	"errors"
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// Errors the HTTP layer maps to status codes. Store errors that are not
// the caller's doing (store.ErrUnavailable and unknown ones) pass through.
// ErrNotFound and ErrQueueFull are the store's own: one error each, whichever
// layer names it.
var (
	ErrNotFound       = store.ErrNotFound                       // 404; also another user's container
	ErrForbidden      = errors.New("forbidden")                 // 403
	ErrQueueFull      = store.ErrQueueFull                      // 429
	ErrVersion        = errors.New("version mismatch")          // 412
	ErrIdempotencyKey = errors.New("idempotency key reused")    // 422
	ErrWaitTimeout    = errors.New("wait timed out")            // 408
	ErrUnreachable    = errors.New("status can not be reached") // 409 from Wait
)

// FieldError is one invalid input value.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists invalid values (422).
type ValidationError struct{ Fields []FieldError }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid values: " + strings.Join(parts, "; ")
}

// fields collects field errors; err() returns nil when there are none.
type fields []FieldError

func (f *fields) add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (f fields) err() error {
	if len(f) == 0 {
		return nil
	}
	return &ValidationError{Fields: f}
}

// StateError is an operation the FSM forbids from the instance's current
// status (409).
type StateError struct {
	Op      string
	Current fsm.Status
	// Why, when set, is what besides the status forbids it.
	Why string
}

func (e *StateError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("cannot %s a container that is %s: %s", e.Op, e.Current, e.Why)
	}
	return fmt.Sprintf("cannot %s a container that is %s", e.Op, e.Current)
}

// Is makes a StateError match fsm.ErrInvalidTransition.
func (e *StateError) Is(target error) bool { return target == fsm.ErrInvalidTransition }
