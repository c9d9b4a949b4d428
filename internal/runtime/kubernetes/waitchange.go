package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth-io/berth/internal/runtime"
)

// WaitChange returns once ref's Pod is no longer in the state last
// reported (its phase or waiting reason differ, or it is deleted, or the
// watch ends), or with ctx's error when ctx ends first. It watches the Pod
// by name as a bare client waiting for Running does: a watch without a
// resource version opens with the Pod as it is now, so no read comes
// before it, and the changes that leave the reported state alone (the
// scheduler's binding, a condition) are waited through rather than
// answered with another inspect. A return without error only means
// "inspect again". A Pod deleted before the watch opens sends nothing: the
// caller's bound (the worker's, at most 2 s) ends the wait, and its next
// inspect finds the Pod gone.
func (r *Runtime) WaitChange(ctx context.Context, ref runtime.Ref, last runtime.State) error {
	const op = "watch"
	if ref.InstanceID == "" {
		return runtime.Errorf(runtime.ErrInvalid, op, "", ref.Node, "a kubernetes ref needs an instance id")
	}
	cl, err := r.clusterOf(ctx, op, ref)
	if err != nil {
		return err
	}
	pods, err := r.pods(ctx, cl, op, ref)
	if err != nil {
		return err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", podName(ref.InstanceID)).String(),
	})
	if err != nil {
		return classify(err, op, ref.InstanceID, cl.cfg.Name)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open {
				return nil
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				// A deletion, or an error such as a version too old:
				// the caller looks again.
				return nil
			}
			if now := stateOf(cl, pod); now.Phase != last.Phase || now.Error != last.Error {
				return nil
			}
		}
	}
}

// clusterOf is the cluster a Ref's Pod is in: the one its node names, else
// (a Ref whose node was never recorded) the one locate finds it in.
func (r *Runtime) clusterOf(ctx context.Context, op string, ref runtime.Ref) (*cluster, error) {
	if ref.Node != "" {
		return r.clusterFor(op, ref.InstanceID, ref.Node)
	}
	cl, _, err := r.locate(ctx, op, ref)
	return cl, err
}
