package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.StatsReader = (*Runtime)(nil)

// metricsGroupVersion is the resource metrics API (metrics-server, or any
// adapter that serves it): the kubelet's usage of each Pod's containers.
const metricsGroupVersion = "metrics.k8s.io/v1beta1"

// podMetrics is the part of a metrics.k8s.io PodMetrics berth reads (the
// type lives in k8s.io/metrics, a module berth does not otherwise need).
type podMetrics struct {
	Timestamp  time.Time `json:"timestamp"`
	Window     string    `json:"window"`
	Containers []struct {
		Name  string              `json:"name"`
		Usage corev1.ResourceList `json:"usage"`
	} `json:"containers"`
}

// Stats reads ref's Pod usage from the cluster's resource metrics API (see
// runtime.StatsReader). That API gives CPU and memory only: network, block
// I/O, process counts and OOM kills are nil. A cluster that serves no
// metrics API (no metrics-server) is runtime.ErrNotServed, and one that
// has no reading of the Pod yet (the first scrape comes up to its
// resolution after the start) is runtime.ErrUnavailable.
func (r *Runtime) Stats(ctx context.Context, ref runtime.Ref) (runtime.Stats, error) {
	cl, pod, err := r.locate(ctx, "stats", ref)
	if err != nil {
		return runtime.Stats{}, err
	}
	node := cl.cfg.Name
	if cs := mainStatus(pod); pod.DeletionTimestamp != nil || cs == nil || cs.State.Running == nil {
		return runtime.Stats{}, runtime.Errorf(runtime.ErrConflict, "stats", ref.InstanceID, node, "the container is not running")
	}
	cs, err := cl.client(ctx)
	if err != nil {
		return runtime.Stats{}, runtime.NewError(runtime.ErrUnavailable, "stats", ref.InstanceID, node, err)
	}
	if _, err := cs.Discovery().ServerResourcesForGroupVersion(metricsGroupVersion); err != nil {
		if apierrors.IsNotFound(err) {
			return runtime.Stats{}, runtime.Errorf(runtime.ErrNotServed, "stats", ref.InstanceID, node,
				"cluster %s serves no resource metrics API (%s): install metrics-server to read usage", node, metricsGroupVersion)
		}
		return runtime.Stats{}, classify(err, "stats", ref.InstanceID, node)
	}
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/apis", metricsGroupVersion, "namespaces", cl.cfg.Namespace, "pods", pod.Name).DoRaw(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return runtime.Stats{}, runtime.Errorf(runtime.ErrUnavailable, "stats", ref.InstanceID, node, "the cluster has no usage reading of the pod yet")
		}
		return runtime.Stats{}, classify(err, "stats", ref.InstanceID, node)
	}
	var pm podMetrics
	if err := json.Unmarshal(raw, &pm); err != nil {
		return runtime.Stats{}, runtime.NewError(runtime.ErrFailed, "stats", ref.InstanceID, node, fmt.Errorf("reading the pod's metrics: %w", err))
	}
	return statsOf(pm, pod), nil
}

// statsOf converts the main container's usage; its CPU limit, if any, is the
// Pod spec's.
func statsOf(pm podMetrics, pod *corev1.Pod) runtime.Stats {
	out := runtime.Stats{At: pm.Timestamp}
	for _, c := range pm.Containers {
		if c.Name != containerName {
			continue
		}
		if q, ok := c.Usage[corev1.ResourceCPU]; ok {
			out.CPU.Cores = float64(q.MilliValue()) / 1000
		}
		if q, ok := c.Usage[corev1.ResourceMemory]; ok && q.Value() > 0 {
			out.Memory.UsageBytes = uint64(q.Value())
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			out.CPU.PercentOfLimit = runtime.PercentOf(out.CPU.Cores, float64(q.MilliValue())/1000)
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && q.Value() > 0 {
			v := uint64(q.Value())
			out.Memory.LimitBytes = &v
		}
	}
	return out
}
