package kubernetes

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// podEndpoints are a running Pod's endpoints: its IP and each port its
// container declares (berth makes no Service, so the Pod's IP is the
// address, reachable from inside the cluster). None until the Pod has an
// IP, and none once it does not run.
func podEndpoints(pod *corev1.Pod, phase runtime.Phase) []container.Endpoint {
	if phase != runtime.PhaseRunning || pod.Status.PodIP == "" {
		return nil
	}
	var eps []container.Endpoint
	for _, c := range pod.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		for _, p := range c.Ports {
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			eps = append(eps, container.Endpoint{Port: int(p.ContainerPort), Protocol: proto,
				Host: pod.Status.PodIP, HostPort: int(p.ContainerPort), Via: container.EndpointViaPod})
		}
	}
	slices.SortFunc(eps, func(a, b container.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return eps
}
