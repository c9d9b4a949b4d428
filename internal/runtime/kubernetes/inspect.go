package kubernetes

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-io/berth/internal/runtime"
)

// Inspect reports the Pod's state: its phase in berth's words, the exit
// code and reason from the container's terminated state, and, while it
// waits to run, why (Unschedulable, ImagePullBackOff, …) in State.Error.
func (r *Runtime) Inspect(ctx context.Context, ref runtime.Ref) (runtime.State, error) {
	cl, pod, err := r.locate(ctx, "inspect", ref)
	if err != nil {
		return runtime.State{}, err
	}
	return stateOf(cl, pod), nil
}

// List reports berth's Pods (of this scope) in every cluster: one call per
// cluster, in parallel. A cluster that fails leaves its Pods out and the
// error says which.
func (r *Runtime) List(ctx context.Context) ([]runtime.State, error) {
	per := make([][]runtime.State, len(r.clusters))
	errs := make([]error, len(r.clusters))
	var wg sync.WaitGroup
	for i, cl := range r.clusters {
		wg.Go(func() {
			pods, err := r.listPods(ctx, cl, "", false)
			if err != nil {
				errs[i] = err
				return
			}
			for j := range pods {
				per[i] = append(per[i], stateOf(cl, &pods[j]))
			}
		})
	}
	wg.Wait()
	var out []runtime.State
	for _, s := range per {
		out = append(out, s...)
	}
	return out, errors.Join(errs...)
}

// listPods lists berth's Pods of this scope in cl's namespace, or only
// instanceID's when it is not empty. By default the list is served from
// the API server's watch cache (resourceVersion "0"): as fresh as any
// watch, without a quorum read of etcd, which is what a reconcile pass or
// a lookup of one instance's Pod needs. consistent asks for a list that
// includes every write made before it (resourceVersion unset), for a
// count that must see the Pod a create has just made.
func (r *Runtime) listPods(ctx context.Context, cl *cluster, instanceID string, consistent bool) ([]corev1.Pod, error) {
	cs, err := cl.client(ctx)
	if err != nil {
		return nil, runtime.NewError(runtime.ErrUnavailable, "list", "", cl.cfg.Name, err)
	}
	rv := "0"
	if consistent {
		rv = ""
	}
	res, err := cs.CoreV1().Pods(cl.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: r.selector(instanceID).String(), ResourceVersion: rv,
	})
	if err != nil {
		return nil, classify(err, "list", "", cl.cfg.Name)
	}
	return res.Items, nil
}

// selector picks berth's Pods of this runtime's scope, or only
// instanceID's when it is not empty.
func (r *Runtime) selector(instanceID string) labels.Selector {
	set := labels.Set{runtime.LabelManaged: "true"}
	if r.scope != "" {
		set[runtime.LabelScope] = r.scope
	}
	if instanceID != "" {
		set[runtime.LabelInstanceID] = instanceID
	}
	return labels.SelectorFromSet(set)
}

// stateOf maps a Pod to berth's State.
func stateOf(cl *cluster, pod *corev1.Pod) runtime.State {
	s := runtime.State{
		Ref:       runtime.Ref{InstanceID: pod.Labels[runtime.LabelInstanceID], Node: nodeName(cl, pod), RuntimeID: string(pod.UID)},
		Name:      pod.Name,
		Labels:    pod.Labels,
		CreatedAt: pod.CreationTimestamp.UTC(),
	}
	if len(pod.Spec.Containers) > 0 {
		s.Image = pod.Spec.Containers[0].Image
	}
	cs := mainStatus(pod)
	var term *corev1.ContainerStateTerminated
	if cs != nil {
		term = cs.State.Terminated
		if run := cs.State.Running; run != nil && !run.StartedAt.IsZero() {
			s.StartedAt = timePtr(run.StartedAt)
		}
		if term != nil && !term.StartedAt.IsZero() {
			s.StartedAt = timePtr(term.StartedAt)
		}
	}
	switch {
	case pod.DeletionTimestamp != nil:
		s.Phase = runtime.PhaseRemoving
	case term != nil || ended(pod):
		s.Phase = runtime.PhaseExited
	case pod.Status.Phase == corev1.PodRunning && cs != nil && cs.State.Running != nil:
		s.Phase = runtime.PhaseRunning
	case pod.Status.Phase == corev1.PodPending, pod.Status.Phase == corev1.PodRunning, pod.Status.Phase == "":
		// Running with its container not (yet) running: still starting.
		s.Phase = runtime.PhaseCreated
		s.Error = waitReason(pod, cs)
	default:
		s.Phase = runtime.PhaseUnknown
		s.Error = joinReason(pod.Status.Reason, pod.Status.Message)
	}
	if term != nil {
		code := int(term.ExitCode)
		s.ExitCode = &code
		s.OOMKilled = term.Reason == "OOMKilled"
		if !term.FinishedAt.IsZero() {
			s.FinishedAt = timePtr(term.FinishedAt)
		}
		if term.ExitCode != 0 && !s.OOMKilled {
			s.Error = joinReason(term.Reason, term.Message)
		}
	} else if ended(pod) {
		// Ended without the container ever running (evicted, a node
		// lost): no exit code, the Pod's reason instead.
		s.Error = joinReason(pod.Status.Reason, pod.Status.Message)
	}
	s.Endpoints = podEndpoints(pod, s.Phase)
	return s
}

// mainStatus is the status of the Pod's one container.
func mainStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == containerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// waitReason says why a Pod is not running yet, when Kubernetes says it is
// stuck rather than busy: the scheduler found no node, or the container
// waits on something other than its own creation (an image it cannot pull,
// a missing secret or claim).
func waitReason(pod *corev1.Pod, cs *corev1.ContainerStatus) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return joinReason(c.Reason, c.Message)
		}
	}
	if cs != nil && cs.State.Waiting != nil {
		switch w := cs.State.Waiting; w.Reason {
		case "", "ContainerCreating", "PodInitializing":
		default:
			return joinReason(w.Reason, w.Message)
		}
	}
	return ""
}

func joinReason(reason, msg string) string {
	msg = strings.TrimSpace(msg)
	switch {
	case reason == "":
		return msg
	case msg == "":
		return reason
	}
	return reason + ": " + msg
}

func timePtr(t metav1.Time) *time.Time {
	u := t.UTC()
	return &u
}
