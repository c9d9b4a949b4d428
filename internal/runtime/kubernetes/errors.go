package kubernetes

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-io/berth/internal/runtime"
)

// classify wraps an API server error in a runtime.Error of the kind its
// status says, so workers know whether to retry. The API server's messages
// name objects and fields, never env values (berth puts env values only in
// the Pod spec, which a Status does not echo), so they are kept.
func classify(err error, op, instance, node string) error {
	if err == nil {
		return nil
	}
	var re *runtime.Error
	if errors.As(err, &re) {
		return err
	}
	return runtime.NewError(kindOf(err), op, instance, node, err)
}

func kindOf(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return runtime.ErrNotFound
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return runtime.ErrConflict
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsUnauthorized(err), apierrors.IsMethodNotSupported(err), apierrors.IsRequestEntityTooLargeError(err):
		// Forbidden includes a quota or a policy (PodSecurity, a
		// LimitRange) refusing this Pod: the same Pod is refused again.
		if apierrors.IsForbidden(err) && isQuotaExceeded(err) {
			return runtime.ErrUnavailable
		}
		return runtime.ErrInvalid
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), serverError(err):
		// The API server could not take the request, or failed in itself.
		return runtime.ErrUnavailable
	case runtime.Unreachable(err), errors.Is(err, context.Canceled):
		return runtime.ErrUnavailable
	}
	// An answer client-go could not type (an unknown status, a body it
	// could not decode): it may pass, but it may as well be this
	// request's fault, so its retries are bounded (runtime.ErrFailed's
	// contract, the same answer the Docker runtime gives).
	return runtime.ErrFailed
}

// serverError reports whether err is an API status of the 5xx class.
func serverError(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code >= 500
}

// isQuotaExceeded: a ResourceQuota refusal passes once other Pods end.
func isQuotaExceeded(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	return strings.Contains(strings.ToLower(st.Status().Message), "exceeded quota")
}
