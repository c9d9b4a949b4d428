package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

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
	kind := kindOf(err)
	if errors.Is(kind, runtime.ErrUnavailable) && (op == "create" || op == "start") && badSpec(err) {
		kind = runtime.ErrInvalid
	}
	return runtime.NewError(kind, op, instance, node, err)
}

// badSpecMessages are what an engine answers, as a 500, to a container spec
// it can never run: API 1.41 engines report these as server errors, and
// newer ones as 400s with the same text. Retrying them only hides the
// cause: they are ErrInvalid, and the instance fails saying why.
var badSpecMessages = []string{
	"invalid volume specification", // a bind it cannot parse, target "/"
	"invalid mount config",         // ditto, from the mount parser
	"duplicate mount point",        // two volumes on one target
	"cannot mkdir",                 // workdir names a file in the image
	"not a directory",              // a path through a file
	"invalid argument",             // a path holding NUL
	"executable file not found",    // command not in the image
	"no such file or directory",    // command or workdir missing from the image
	"exec format error",            // command is not a program for this host
	"invalid reference format",     // an image reference the engine cannot parse
	"minimum memory limit",         // memory below the engine's floor
	"range of cpus",                // more CPUs than the host has
	"invalid port specification",   // a port it cannot parse
	"permission denied",            // command not executable
	"is not a valid volume name",   // (older engines' wording)
	"includes invalid characters",  // a volume name it refuses
}

// badSpec reports whether an engine server error is about the spec rather
// than the engine: only server errors (500) are read, so a connection
// failure whose text happens to match is still unavailable.
func badSpec(err error) bool {
	if !cerrdefs.IsInternal(err) && !cerrdefs.IsUnknown(err) {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, m := range badSpecMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

func kindOf(err error) error {
	for _, kind := range []error{runtime.ErrNotFound, runtime.ErrConflict, runtime.ErrUnavailable, runtime.ErrFailed, runtime.ErrInvalid} {
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
	case unreachable(err):
		return runtime.ErrUnavailable
	case cerrdefs.IsInternal(err), cerrdefs.IsUnknown(err):
		// A server error that is not about the spec (classify asks badSpec
		// first): the engine's own trouble (a full thin pool, a daemon
		// failing), which says nothing about the request.
		return runtime.ErrUnavailable
	case errors.Is(err, context.Canceled):
		// The caller gave up; whoever redelivers the work may retry it.
		return runtime.ErrUnavailable
	}
	// Anything else (an error the engine's client could not even type): it
	// may pass, but it may as well be this request's fault, so its retries
	// are bounded.
	return runtime.ErrFailed
}

// unreachable reports whether err says the engine could not take the
// request at all: no connection, a timeout, or an overloaded engine (503,
// 429).
func unreachable(err error) bool {
	switch {
	case client.IsErrConnectionFailed(err), runtime.Unreachable(err):
		return true
	case cerrdefs.IsUnavailable(err), cerrdefs.IsDeadlineExceeded(err), cerrdefs.IsResourceExhausted(err):
		return true
	}
	return false
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
