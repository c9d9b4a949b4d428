package kubernetes

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-io/berth/internal/runtime"
)

// Watch streams berth's Pod events from every cluster (see
// runtime.Runtime.Watch) through one informer per cluster, limited to the
// cluster's namespace and berth's labels, so berth needs no cluster-wide
// rights. The informer lists, then watches from the list's version, and
// after a break resumes from the last version it saw (relisting when that
// is too old), so no change is lost; a Pod it learns of from a list is
// reported with its current state, which may repeat an event.
func (r *Runtime) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	out := make(chan runtime.Event, 64)
	var wg sync.WaitGroup
	for _, cl := range r.clusters {
		wg.Go(func() { r.watchCluster(ctx, cl, out) })
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}

func (r *Runtime) watchCluster(ctx context.Context, cl *cluster, out chan<- runtime.Event) {
	client, err := cl.client(ctx)
	for err != nil {
		// An EKS cluster not described yet: keep trying until ctx ends.
		r.log.WarnContext(ctx, "kubernetes watch: cluster unavailable", "cluster", cl.cfg.Name, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		client, err = cl.client(ctx)
	}
	pc := newPodCache(client.CoreV1().Pods(cl.cfg.Namespace), r.selector("").String())
	inf := pc.inf
	emit := func(evs ...runtime.Event) {
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				emit(podEvents(cl, nil, pod)...)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				emit(podEvents(cl, old, pod)...)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				emit(destroyed(cl, pod))
			}
		},
	})
	if err != nil {
		r.log.ErrorContext(ctx, "kubernetes watch: adding the handler", "cluster", cl.cfg.Name, "error", err)
		return
	}
	// While this watch runs, placement reads its copy of the Pods (a
	// second Watch of the same cluster takes over; the last one to end
	// leaves placement listing again).
	cl.pods.Store(pc)
	defer cl.pods.CompareAndSwap(pc, nil)
	inf.RunWithContext(ctx)
}

// podEvents are the lifecycle events between two states of a Pod (old is
// nil for a Pod first seen): started when its container began running,
// then oom and exited when it ended. An old Pod of another UID is another
// run under the same name (a stop deletes the Pod, a start makes it again):
// when a watch break folds the delete and the create into one update of the
// informer's key, the new Pod is compared with nothing, as a Pod first seen,
// because start times have the API's one-second precision and a start
// within the second of the last one would otherwise look like no change.
func podEvents(cl *cluster, old, pod *corev1.Pod) []runtime.Event {
	id := pod.Labels[runtime.LabelInstanceID]
	if id == "" {
		return nil
	}
	was, now := stateOf(cl, &corev1.Pod{}), stateOf(cl, pod)
	if old != nil && old.UID == pod.UID {
		was = stateOf(cl, old)
	}
	base := runtime.Event{InstanceID: id, Node: now.Node, RuntimeID: now.RuntimeID}
	var evs []runtime.Event
	if now.StartedAt != nil && (was.StartedAt == nil || !was.StartedAt.Equal(*now.StartedAt)) && pod.DeletionTimestamp == nil {
		ev := base
		ev.Kind, ev.Time = runtime.EventStarted, *now.StartedAt
		evs = append(evs, ev)
	}
	if now.Phase == runtime.PhaseExited && was.Phase != runtime.PhaseExited {
		at := time.Now().UTC()
		if now.FinishedAt != nil {
			at = *now.FinishedAt
		}
		if now.OOMKilled {
			ev := base
			ev.Kind, ev.Time = runtime.EventOOM, at
			evs = append(evs, ev)
		}
		ev := base
		ev.Kind, ev.Time, ev.ExitCode, ev.RunStartedAt = runtime.EventExited, at, now.ExitCode, now.StartedAt
		evs = append(evs, ev)
	}
	return evs
}

func destroyed(cl *cluster, pod *corev1.Pod) runtime.Event {
	return runtime.Event{
		InstanceID: pod.Labels[runtime.LabelInstanceID], Kind: runtime.EventDestroyed, Time: time.Now().UTC(),
		Node: nodeName(cl, pod), RuntimeID: string(pod.UID),
	}
}
