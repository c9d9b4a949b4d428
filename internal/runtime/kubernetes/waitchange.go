package kubernetes

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/berth-io/berth/internal/runtime"
)

// WaitChange returns once ref's Pod may no longer be in the state last
// reported (its phase or waiting reason differ, or the API server sent any
// change of it), or with ctx's error when ctx ends first. It reads the Pod
// and watches it by name from the version read, as a bare client waiting
// for Running does, so the worker's stabilisation wait sees a Pod start as
// soon as the API server does instead of at its next poll. A return without
// error only means "inspect again".
func (r *Runtime) WaitChange(ctx context.Context, ref runtime.Ref, last runtime.State) error {
	const op = "watch"
	cl, pod, err := r.locate(ctx, op, ref)
	if err != nil {
		return err
	}
	if now := stateOf(cl, pod); now.Phase != last.Phase || now.Error != last.Error {
		return nil
	}
	pods, err := r.pods(ctx, cl, op, ref)
	if err != nil {
		return err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return classify(err, op, ref.InstanceID, cl.cfg.Name)
	}
	defer w.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.ResultChan():
		// Any event (a change, a deletion, an error such as a version
		// too old, or the stream closing): the caller looks again.
		return nil
	}
}
