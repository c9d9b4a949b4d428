package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Create makes inst's Pod (see runtime.Runtime.Create): in its recorded
// cluster, else in the cluster placement picks; a Pod of the same instance
// that an earlier attempt made is adopted. The Pod runs as soon as the
// scheduler and the kubelet get to it: there is no created-but-not-started
// Pod in Kubernetes.
func (r *Runtime) Create(ctx context.Context, inst berth.Instance) (runtime.Ref, error) {
	p, err := r.placer.ForCreate(ctx, inst)
	if err != nil {
		return runtime.Ref{}, err
	}
	defer p.Release()
	cl := p.Node
	if p.Existing != nil {
		return refOf(inst.ID, cl, p.Existing), nil
	}
	node := cl.cfg.Name
	secret, err := r.pull.ensure(ctx, cl, inst.ID)
	if err != nil {
		return runtime.Ref{}, err
	}
	pod, err := podFor(inst, cl.cfg, r.scope, secret)
	if err != nil {
		return runtime.Ref{}, runtime.NewError(runtime.ErrInvalid, "create", inst.ID, node, err)
	}
	cs, err := cl.client(ctx)
	if err != nil {
		return runtime.Ref{}, runtime.NewError(runtime.ErrUnavailable, "create", inst.ID, node, err)
	}
	got, err := cs.CoreV1().Pods(cl.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case err == nil:
		return refOf(inst.ID, cl, got), nil
	case apierrors.IsAlreadyExists(err):
		return r.adopt(ctx, cl, inst, err)
	case apierrors.IsNotFound(err):
		// The namespace: no retry makes it appear.
		return runtime.Ref{}, runtime.Errorf(runtime.ErrInvalid, "create", inst.ID, node,
			"namespace %s: %w (berth does not create namespaces; see docs/kubernetes.md)", cl.cfg.Namespace, err)
	}
	return runtime.Ref{}, classify(err, "create", inst.ID, node)
}

// adopt answers a name conflict: the Pod is this instance's when its
// labels say so (an earlier attempt made it), else the name is taken.
func (r *Runtime) adopt(ctx context.Context, cl *cluster, inst berth.Instance, conflict error) (runtime.Ref, error) {
	node := cl.cfg.Name
	cs, err := cl.client(ctx)
	if err != nil {
		return runtime.Ref{}, runtime.NewError(runtime.ErrUnavailable, "create", inst.ID, node, err)
	}
	got, err := cs.CoreV1().Pods(cl.cfg.Namespace).Get(ctx, podName(inst.ID), metav1.GetOptions{})
	if err != nil {
		return runtime.Ref{}, adoptFailed(err, inst.ID, node)
	}
	if !runtime.Owns(got.Labels, inst.ID, r.scope) {
		return runtime.Ref{}, runtime.NewError(runtime.ErrConflict, "create", inst.ID, node, conflict)
	}
	if got.DeletionTimestamp != nil {
		// The Pod of an earlier life (a stop or delete still finishing):
		// its name is free once it is gone.
		return runtime.Ref{}, runtime.Errorf(runtime.ErrUnavailable, "create", inst.ID, node,
			"pod %s is still terminating", got.Name)
	}
	return refOf(inst.ID, cl, got), nil
}

// refOf is the Ref of an instance's Pod: the node is "<cluster>/<node>"
// once the Pod is scheduled.
func refOf(instanceID string, cl *cluster, pod *corev1.Pod) runtime.Ref {
	return runtime.Ref{InstanceID: instanceID, Node: nodeName(cl, pod), RuntimeID: string(pod.UID)}
}

func nodeName(cl *cluster, pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" {
		return cl.cfg.Name
	}
	return cl.cfg.Name + "/" + pod.Spec.NodeName
}

// adoptFailed is the error of an adoption whose read failed: a Pod gone
// again between the create and the read (a concurrent delete) answered the
// request and may pass on a retry (runtime.ErrFailed, as in the Docker
// runtime); anything else is classified as usual.
func adoptFailed(err error, instanceID, node string) error {
	if apierrors.IsNotFound(err) {
		return runtime.NewError(runtime.ErrFailed, "create", instanceID, node, err)
	}
	return classify(err, "create", instanceID, node)
}
