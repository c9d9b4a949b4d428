package container

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-io/berth/internal/fsm"
)

// The quotas, each a name the API's quota-exceeded problem carries.
const (
	// QuotaInstances counts an owner's instances that are not deleted.
	QuotaInstances = "instances"
	// QuotaRunning counts instances that run or are on their way to run
	// (HoldsRun).
	QuotaRunning = "running"
	// QuotaPending counts creates not yet finished (pending, creating).
	QuotaPending = "pending"
	// QuotaCPUs sums the CPU that running instances' resources reserve.
	QuotaCPUs = "cpus"
	// QuotaMemory sums the memory that running instances' resources reserve.
	QuotaMemory = "memory"
)

// Quotas lists the quota names in the order limits are checked.
var Quotas = []string{QuotaInstances, QuotaRunning, QuotaPending, QuotaCPUs, QuotaMemory}

// QuotaUse is an amount of each quota: the limits of an owner or a team
// (0: no limit), or what it uses. CPU is in millicores and memory in
// bytes, as Resources parses them.
type QuotaUse struct {
	Instances   int64 `json:"instances"`
	Running     int64 `json:"running"`
	Pending     int64 `json:"pending"`
	CPUMillis   int64 `json:"cpu_millis"`
	MemoryBytes int64 `json:"memory_bytes"`
}

// Of returns the amount of the named quota (one of Quotas).
func (u QuotaUse) Of(quota string) int64 {
	switch quota {
	case QuotaInstances:
		return u.Instances
	case QuotaRunning:
		return u.Running
	case QuotaPending:
		return u.Pending
	case QuotaCPUs:
		return u.CPUMillis
	case QuotaMemory:
		return u.MemoryBytes
	}
	return 0
}

// IsZero reports whether every amount is zero (limits: none set).
func (u QuotaUse) IsZero() bool { return u == QuotaUse{} }

// HoldsRun reports whether an instance in s counts toward the running,
// cpus and memory quotas: it runs, or a create or start request is taking
// it there. Stopped, failed and an instance being deleted do not.
func HoldsRun(s fsm.Status) bool {
	switch s {
	case fsm.Pending, fsm.Creating, fsm.Running, fsm.Paused, fsm.StopPending, fsm.Stopping, fsm.StartPending, fsm.Starting:
		return true
	}
	return false
}

// Reserved is what an instance in s reserves of each quota, given its
// spec's resources (CPU and memory as ParseCPU and ParseMemory read them;
// a value they refuse reserves nothing, as templates are validated when
// stored).
func Reserved(s fsm.Status, r Resources) QuotaUse {
	u := QuotaUse{Instances: 1}
	if s.HoldsCreateSlot() {
		u.Pending = 1
	}
	if HoldsRun(s) {
		u.Running = 1
		u.CPUMillis, _ = ParseCPU(r.CPU)
		u.MemoryBytes, _ = ParseMemory(r.Memory)
	}
	return u
}

// QuotaLimits is how quotas are written in config.yml (quotas.default)
// and in the API: counts, cpus a number of cores ("2", "0.5", "500m"),
// memory an amount of bytes ("8Gi"). Zero or empty: no limit.
type QuotaLimits struct {
	Instances int64  `json:"instances" yaml:"instances"`
	Running   int64  `json:"running" yaml:"running"`
	Pending   int64  `json:"pending" yaml:"pending"`
	CPUs      string `json:"cpus" yaml:"cpus"`
	Memory    string `json:"memory" yaml:"memory"`
}

// Parse checks l and returns it as amounts. The error names the field.
func (l QuotaLimits) Parse() (QuotaUse, error) {
	u := QuotaUse{Instances: l.Instances, Running: l.Running, Pending: l.Pending}
	for _, f := range []struct {
		name string
		v    int64
	}{{QuotaInstances, l.Instances}, {QuotaRunning, l.Running}, {QuotaPending, l.Pending}} {
		if f.v < 0 {
			return QuotaUse{}, fmt.Errorf("%s: must be ≥ 0 (0: no limit), got %d", f.name, f.v)
		}
	}
	if l.CPUs != "" && l.CPUs != "0" {
		q, err := resource.ParseQuantity(l.CPUs)
		if err != nil || q.Sign() < 0 {
			return QuotaUse{}, fmt.Errorf("cpus: want a number of cores (\"4\", \"0.5\") or millicores (\"500m\"), got %q", l.CPUs)
		}
		u.CPUMillis = q.MilliValue()
	}
	if l.Memory != "" && l.Memory != "0" {
		q, err := resource.ParseQuantity(l.Memory)
		if err != nil || q.Sign() < 0 {
			return QuotaUse{}, fmt.Errorf("memory: want an amount of bytes with an optional suffix (\"8Gi\", \"512Mi\"), got %q", l.Memory)
		}
		u.MemoryBytes = q.Value()
	}
	return u, nil
}

// QuotaLimitsOf writes amounts the way QuotaLimits reads them.
func QuotaLimitsOf(u QuotaUse) QuotaLimits {
	l := QuotaLimits{Instances: u.Instances, Running: u.Running, Pending: u.Pending}
	if u.CPUMillis != 0 {
		l.CPUs = FormatCPU(u.CPUMillis)
	}
	if u.MemoryBytes != 0 {
		l.Memory = resource.NewQuantity(u.MemoryBytes, resource.BinarySI).String()
	}
	return l
}

// FormatCPU writes millicores as a number of cores ("2", "0.5").
func FormatCPU(millis int64) string {
	return strconv.FormatFloat(float64(millis)/1000, 'f', -1, 64)
}
