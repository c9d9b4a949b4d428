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
		Count:      r.count,
		Find:       r.find,
		ObjectNode: nodeName,
	}
}

// count is how many of berth's Pods (of this scope) in cl are active: not
// ended, not being deleted.
//
// It lists the cluster consistently (no resourceVersion): the placement
// view counts on a listing holding every Pod made before it began, or a
// cluster at its capacity would take one more. A watch-fed copy, the
// informer's or the API server's watch cache, may not have it yet.
func (r *Runtime) count(ctx context.Context, cl *cluster) (int, error) {
	pods, err := r.listPods(ctx, cl, "", true)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods {
		if pods[i].DeletionTimestamp == nil && !ended(&pods[i]) {
			n++
		}
	}
	return n, nil
}

// find is instanceID's Pod in cl (not one being deleted), nil when there
// is none.
//
// It reads the informer's copy while a Watch of the cluster runs and it is
// usable (no API call); otherwise it lists the instance's Pods, which also
// finds out a cluster that does not answer. A copy that lags only misses
// an earlier attempt's Pod, which the create's POST then finds by its
// name.
func (r *Runtime) find(ctx context.Context, cl *cluster, instanceID string) (*corev1.Pod, error) {
	var pods []corev1.Pod
	if pc := cl.pods.Load(); pc != nil && pc.usable() {
		pods = pc.pods(instanceID)
	} else {
		var err error
		if pods, err = r.listPods(ctx, cl, instanceID, false); err != nil {
			return nil, err
		}
	}
	for i := range pods {
		if runtime.Owns(pods[i].Labels, instanceID, r.scope) && pods[i].DeletionTimestamp == nil {
			return &pods[i], nil
		}
	}
	return nil, nil
}
