package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Place returns the cluster for inst (see runtime.Runtime.Place; the rules
// are runtime.Placer's).
func (r *Runtime) Place(ctx context.Context, inst berth.Instance) (string, error) {
	return r.placer.Place(ctx, inst)
}

// clusterPlacer places instances on clusters, adopting Pods.
type clusterPlacer = runtime.Placer[*cluster, corev1.Pod]

// newPlacer is the runtime's placement: runtime.Placer over its clusters.
func (r *Runtime) newPlacer() *clusterPlacer {
	return &clusterPlacer{
		Kind:       "kubernetes cluster",
		Nodes:      r.clusters,
		Named:      r.clusterFor,
		Load:       r.load,
		ObjectNode: nodeName,
	}
}

// load counts berth's active Pods (of this scope) in cl and finds inst's;
// without count, it looks up inst's Pod only (runtime.Choose).
//
// A count lists the cluster consistently: it must include the Pod a create
// made just before (its reservation is released once Create returns), or
// a cluster at its capacity would take one more. A watch-fed copy, the
// informer's or the API server's watch cache, may not have it yet.
//
// A lookup of inst's Pod alone reads the informer's copy while a Watch of
// the cluster runs and it is usable (no API call: the create's path on one
// cluster without capacity); otherwise it lists, which also finds out a
// cluster that does not answer. A copy that lags only misses an earlier
// attempt's Pod, which the create's POST then finds by its name.
func (r *Runtime) load(ctx context.Context, cl *cluster, instanceID string, count bool) runtime.Load[corev1.Pod] {
	only := ""
	if !count {
		only = instanceID
	}
	var pods []corev1.Pod
	var err error
	if pc := cl.pods.Load(); !count && pc != nil && pc.usable() {
		pods = pc.pods(only)
	} else {
		pods, err = r.listPods(ctx, cl, only, count)
	}
	if err != nil {
		return runtime.Load[corev1.Pod]{Err: err}
	}
	var l runtime.Load[corev1.Pod]
	for i := range pods {
		p := &pods[i]
		if runtime.Owns(p.Labels, instanceID, r.scope) && p.DeletionTimestamp == nil {
			l.Existing = p
		}
		if p.DeletionTimestamp == nil && !ended(p) {
			l.Active++
		}
	}
	return l
}
