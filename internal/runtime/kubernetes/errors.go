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
	case errors.Is(err, context.Canceled):
		return runtime.ErrUnavailable
	}
	// Timeouts, throttling, 5xx, connection failures, anything unknown.
	return runtime.ErrUnavailable
}

// isQuotaExceeded: a ResourceQuota refusal passes once other Pods end.
func isQuotaExceeded(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	return strings.Contains(strings.ToLower(st.Status().Message), "exceeded quota")
}
