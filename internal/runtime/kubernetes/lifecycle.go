package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berth-io/berth/internal/runtime"
)

// DefaultGoneTimeout is how long Stop and Start wait, beyond the grace
// period, for a deleted Pod to leave the API server. Defaults to 30 s: a
// kubelet that has not confirmed the kill by then is unwell, and the
// caller's retry looks again.
const DefaultGoneTimeout = 30 * time.Second

// Start checks that the Pod exists: a Pod runs from its creation, so a
// pending or running one is left as it is. A Pod that ended by itself is
// replaced by a new Pod of the same spec (Kubernetes does not restart a
// Pod's containers under restartPolicy Never). A missing Pod, or one being
// deleted (a stop still finishing), is ErrNotFound once it is gone: the
// caller makes a new one from the instance's spec.
func (r *Runtime) Start(ctx context.Context, ref runtime.Ref) error {
	cl, pod, err := r.locate(ctx, "start", ref)
	if err != nil {
		return err
	}
	pods, err := r.pods(ctx, cl, "start", ref)
	if err != nil {
		return err
	}
	switch {
	case pod.DeletionTimestamp != nil:
		if err := waitGone(ctx, pods, pod.Name, pod.UID, DefaultGoneTimeout); err != nil {
			return classify(err, "start", ref.InstanceID, cl.cfg.Name)
		}
		return runtime.Errorf(runtime.ErrNotFound, "start", ref.InstanceID, cl.cfg.Name, "pod %s was being deleted and is gone", pod.Name)
	case !ended(pod):
		return nil
	}
	if err := deleteNow(ctx, pods, pod); err != nil {
		return classify(err, "start", ref.InstanceID, cl.cfg.Name)
	}
	if err := waitGone(ctx, pods, pod.Name, pod.UID, DefaultGoneTimeout); err != nil {
		return classify(err, "start", ref.InstanceID, cl.cfg.Name)
	}
	if _, err := pods.Create(ctx, rerun(pod), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return classify(err, "start", ref.InstanceID, cl.cfg.Name)
	}
	return nil
}

// rerun is a new Pod with the spec of one that ended: what it was made
// with, less what the scheduler and the API server filled in.
func rerun(old *corev1.Pod) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: old.Name, Namespace: old.Namespace, Labels: old.Labels, Annotations: old.Annotations,
		},
		Spec: *old.Spec.DeepCopy(),
	}
	p.Spec.NodeName = ""
	return p
}

// Stop deletes the Pod with grace as its termination grace period (the
// kubelet sends SIGTERM, then SIGKILL), rounded up to whole seconds, and
// waits until it is gone, so that a start that follows can reuse the name.
// A Pod that already ended is left as it is, with its exit code.
func (r *Runtime) Stop(ctx context.Context, ref runtime.Ref, grace time.Duration) error {
	cl, pod, err := r.locate(ctx, "stop", ref)
	if err != nil {
		return err
	}
	if ended(pod) && pod.DeletionTimestamp == nil {
		return nil
	}
	pods, err := r.pods(ctx, cl, "stop", ref)
	if err != nil {
		return err
	}
	secs := int64(max(0, math.Ceil(grace.Seconds())))
	err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return classify(err, "stop", ref.InstanceID, cl.cfg.Name)
	}
	if err := waitGone(ctx, pods, pod.Name, pod.UID, time.Duration(secs)*time.Second+DefaultGoneTimeout); err != nil {
		return classify(err, "stop", ref.InstanceID, cl.cfg.Name)
	}
	return nil
}

// Delete removes the Pod at once, whatever its state (grace period zero:
// the API server forgets it and the kubelet kills what still runs).
func (r *Runtime) Delete(ctx context.Context, ref runtime.Ref) error {
	cl, pod, err := r.locate(ctx, "delete", ref)
	if runtime.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := r.pods(ctx, cl, "delete", ref)
	if err != nil {
		return err
	}
	if err := deleteNow(ctx, pods, pod); err != nil && !apierrors.IsNotFound(err) {
		return classify(err, "delete", ref.InstanceID, cl.cfg.Name)
	}
	return nil
}

func deleteNow(ctx context.Context, pods typedcorev1.PodInterface, pod *corev1.Pod) error {
	zero := int64(0)
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsConflict(err) {
		// Another Pod of the same name: this one is gone already.
		return nil
	}
	return err
}

// ended: the Pod's one container has finished for good.
func ended(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// waitGone waits until the Pod with this uid has left the API server,
// watching it by name from the version last read, for at most timeout.
func waitGone(ctx context.Context, pods typedcorev1.PodInterface, name string, uid types.UID, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID != uid) {
			return nil
		}
		if err != nil {
			return waitErr(ctx, name, err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion,
		})
		if err != nil {
			return waitErr(ctx, name, err)
		}
		gone := func() bool {
			defer w.Stop()
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Deleted:
					return true
				case watch.Error:
					return false // e.g. the version is too old: read again
				}
			}
			return false
		}()
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return waitErr(ctx, name, ctx.Err())
		}
	}
}

func waitErr(ctx context.Context, name string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("pod %s is still terminating: %w", name, err)
	}
	return err
}

// pods is the Pod client of a cluster.
func (r *Runtime) pods(ctx context.Context, cl *cluster, op string, ref runtime.Ref) (typedcorev1.PodInterface, error) {
	cs, err := cl.client(ctx)
	if err != nil {
		return nil, runtime.NewError(runtime.ErrUnavailable, op, ref.InstanceID, cl.cfg.Name, err)
	}
	return cs.CoreV1().Pods(cl.cfg.Namespace), nil
}

// locate finds a Ref's Pod: in the cluster its node names, else (a Ref
// whose node was never recorded) in every cluster. The Pod is addressed by
// the name derived from the instance id, so a lost create response does
// not matter.
func (r *Runtime) locate(ctx context.Context, op string, ref runtime.Ref) (*cluster, *corev1.Pod, error) {
	if ref.InstanceID == "" {
		return nil, nil, runtime.Errorf(runtime.ErrInvalid, op, "", ref.Node, "a kubernetes ref needs an instance id")
	}
	name := podName(ref.InstanceID)
	if ref.Node != "" {
		cl, err := r.clusterFor(op, ref.InstanceID, ref.Node)
		if err != nil {
			return nil, nil, err
		}
		pods, err := r.pods(ctx, cl, op, ref)
		if err != nil {
			return nil, nil, err
		}
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, classify(err, op, ref.InstanceID, ref.Node)
		}
		return cl, pod, nil
	}
	found := make([]*corev1.Pod, len(r.clusters))
	errs := make([]error, len(r.clusters))
	var wg sync.WaitGroup
	for i, cl := range r.clusters {
		wg.Go(func() {
			pods, err := r.pods(ctx, cl, op, ref)
			if err != nil {
				errs[i] = err
				return
			}
			pod, err := pods.Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				found[i] = pod
			case !apierrors.IsNotFound(err):
				errs[i] = classify(err, op, ref.InstanceID, cl.cfg.Name)
			}
		})
	}
	wg.Wait()
	for i, pod := range found {
		if pod != nil {
			return r.clusters[i], pod, nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Not found where we could look; it may be where we could not.
		return nil, nil, runtime.NewError(runtime.ErrUnavailable, op, ref.InstanceID, "", err)
	}
	return nil, nil, runtime.Errorf(runtime.ErrNotFound, op, ref.InstanceID, "", "no pod %s in any cluster", name)
}
