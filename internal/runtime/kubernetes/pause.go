package kubernetes

import (
	"context"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Pauser = (*Runtime)(nil)

// Pause is runtime.ErrNotSupported: a Pod has no pause in the Kubernetes API
// (the kubelet's container runtimes can freeze, but nothing asks them to
// from the API server), so no request is sent. The API refuses a pause of a
// Kubernetes instance before anything is written (container.RuntimePauses).
func (r *Runtime) Pause(_ context.Context, ref runtime.Ref) error {
	return notPausable("pause", ref)
}

// Resume is runtime.ErrNotSupported, as Pause: no Pod berth runs is paused.
func (r *Runtime) Resume(_ context.Context, ref runtime.Ref) error {
	return notPausable("resume", ref)
}

func notPausable(op string, ref runtime.Ref) error {
	return runtime.Errorf(runtime.ErrNotSupported, op, ref.InstanceID, ref.Node, "the kubernetes runtime cannot pause a Pod")
}
