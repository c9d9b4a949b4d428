package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/berth-io/berth/internal/runtime"
)

// classify wraps an Engine API error in a runtime.Error of the kind its
// status says, so workers know whether to retry. The engine's messages name
// containers, images and paths, never env values, so they are kept.
func classify(err error, op, instance, node string) error {
	if err == nil {
		return nil
	}
	var re *runtime.Error
	if errors.As(err, &re) {
		return err // already classified deeper down
	}
	return runtime.NewError(kindOf(err), op, instance, node, err)
}

func kindOf(err error) error {
	for _, kind := range []error{runtime.ErrNotFound, runtime.ErrConflict, runtime.ErrUnavailable, runtime.ErrInvalid} {
		if errors.Is(err, kind) {
			return kind
		}
	}
	switch {
	case cerrdefs.IsNotFound(err):
		return runtime.ErrNotFound
	case cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err):
		return runtime.ErrConflict
	case cerrdefs.IsInvalidArgument(err), cerrdefs.IsUnauthorized(err),
		cerrdefs.IsPermissionDenied(err), cerrdefs.IsNotImplemented(err):
		return runtime.ErrInvalid
	case errors.Is(err, context.Canceled):
		// The caller gave up; whoever redelivers the work may retry it.
		return runtime.ErrUnavailable
	}
	// Connection failures, timeouts, 5xx and anything unknown: retry, and
	// let the dead-letter queue catch what never passes.
	return runtime.ErrUnavailable
}

// kinded marks an error with a runtime kind without putting the kind in its
// message (runtime.Error says it once, in front).
type kinded struct {
	kind error
	err  error
}

func (k *kinded) Error() string   { return k.err.Error() }
func (k *kinded) Unwrap() []error { return []error{k.kind, k.err} }

// invalidf is an error of kind runtime.ErrInvalid.
func invalidf(format string, args ...any) error {
	return &kinded{kind: runtime.ErrInvalid, err: fmt.Errorf(format, args...)}
}
