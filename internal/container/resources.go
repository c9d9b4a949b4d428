package container

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds of Resources, checked when a template is written and again when a
// runtime maps the frozen spec, so a value the API accepted is one every
// runtime can apply.
const (
	// MinCPUMillis is the smallest CPU limit, 1m: Docker's NanoCPUs floor
	// (0.001 CPU), and Kubernetes' resolution.
	MinCPUMillis = 1
	// MaxCPUMillis is the largest CPU limit, 1024 cores: far above any
	// host, far below where nanocores overflow an int64.
	MaxCPUMillis = 1024 * 1000
	// MinMemoryBytes is the smallest memory limit, 4Mi: below it Docker
	// refuses the container and a process cannot start anyway.
	MinMemoryBytes = 4 << 20
	// MaxMemoryBytes is the largest memory limit, 1Pi: far above any host,
	// far below where bytes overflow an int64 (8Ei).
	MaxMemoryBytes = 1 << 50
)

var (
	minCPU = resource.NewMilliQuantity(MinCPUMillis, resource.DecimalSI)
	maxCPU = resource.NewMilliQuantity(MaxCPUMillis, resource.DecimalSI)
	minMem = resource.NewQuantity(MinMemoryBytes, resource.BinarySI)
	maxMem = resource.NewQuantity(MaxMemoryBytes, resource.BinarySI)
)

// ParseCPU reads a CPU limit written as Kubernetes writes quantities ("0.5",
// "2", "500m") and returns it in millicores, rounded up; "" is no limit (0).
// Values outside [MinCPUMillis, MaxCPUMillis] are refused, so "1n" is not
// silently rounded up to 1m.
func ParseCPU(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("cpu %q: want a number of cores (\"0.5\", \"2\") or millicores (\"500m\")", s)
	}
	if q.Cmp(*minCPU) < 0 || q.Cmp(*maxCPU) > 0 {
		return 0, fmt.Errorf("cpu %q: want %s to %s cores", s, minCPU, maxCPU)
	}
	return q.MilliValue(), nil
}

// ParseMemory reads a memory limit written as Kubernetes writes quantities
// ("256Mi", "1Gi", "512M", "1048576") and returns it in bytes, rounded up;
// "" is no limit (0). Values outside [MinMemoryBytes, MaxMemoryBytes] are
// refused.
func ParseMemory(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("memory %q: want an amount of bytes with an optional suffix (\"256Mi\", \"1Gi\", \"512M\")", s)
	}
	if q.Cmp(*minMem) < 0 || q.Cmp(*maxMem) > 0 {
		return 0, fmt.Errorf("memory %q: want %s to %s", s, minMem, maxMem)
	}
	return q.Value(), nil
}
