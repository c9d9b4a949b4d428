package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// ErrNotServed is a runtime that cannot give this reading at all (a Kubernetes
// cluster that serves no metrics API). It is not one of the five kinds a
// worker retries on: no retry makes the reading appear, and the API
// answers it 501 with the reason.
var ErrNotServed = errors.New("not served by this runtime")

// Stats is what a running container uses now, as GET
// /api/containers/{id}/stats answers it (docs/api.md). A reading the
// runtime does not give is nil (null in JSON), never a made-up zero.
type Stats struct {
	// At is when the runtime took the reading.
	At      time.Time     `json:"at"`
	CPU     CPUStats      `json:"cpu"`
	Memory  MemoryStats   `json:"memory"`
	Network *NetworkStats `json:"network"`
	BlockIO *BlockIOStats `json:"block_io"`
	// PIDs is the number of processes and threads in the container.
	PIDs *uint64 `json:"pids"`
}

// CPUStats is the CPU in use now.
type CPUStats struct {
	// Cores is the cores in use over the runtime's last sample window:
	// 1.0 is one core busy all the time.
	Cores float64 `json:"cores"`
	// PercentOfLimit is Cores against the template's CPU limit (100 is the
	// whole limit); nil without a limit.
	PercentOfLimit *float64 `json:"percent_of_limit"`
}

// MemoryStats is the memory in use now.
type MemoryStats struct {
	// UsageBytes is the memory the container's processes hold, without
	// the page cache the kernel may take back.
	UsageBytes uint64 `json:"usage_bytes"`
	// LimitBytes is the container's memory limit (the node's memory when
	// the template sets none); nil when the runtime does not say.
	LimitBytes *uint64 `json:"limit_bytes"`
	// OOMKills counts the container's processes the kernel killed for
	// memory; nil where the runtime does not report it.
	OOMKills *uint64 `json:"oom_kills"`
}

// NetworkStats is what the container's interfaces carried since it
// started.
type NetworkStats struct {
	RxBytes uint64 `json:"rx_bytes"`
	TxBytes uint64 `json:"tx_bytes"`
}

// BlockIOStats is what the container read from and wrote to block devices
// since it started.
type BlockIOStats struct {
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
}

// StatsReader is implemented by runtimes that read a container's usage.
// Stats takes one reading now of ref's container, which must be running
// (ErrConflict otherwise); a container that does not exist is ErrNotFound;
// a runtime that cannot read usage on ref's node is ErrNotServed. The call
// may take as long as one sample window of the runtime (Docker's: 1 s).
type StatsReader interface {
	Stats(ctx context.Context, ref Ref) (Stats, error)
}

// Stats reads inst's container usage through its runtime's StatsReader (the
// StatsReader contract, addressed by instance). A runtime without one is
// ErrNotServed.
func (r *Resolver) Stats(ctx context.Context, inst container.Instance) (Stats, error) {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return Stats{}, err
	}
	sr, ok := rt.(StatsReader)
	if !ok {
		return Stats{}, Errorf(ErrNotServed, "stats", inst.ID, inst.RuntimeNodeName, "the %s runtime cannot read usage", rt.Kind())
	}
	return sr.Stats(ctx, RefOf(inst))
}

// PercentOf is cores against limitCores as a percentage, nil without a
// limit (limitCores ≤ 0).
func PercentOf(cores, limitCores float64) *float64 {
	if limitCores <= 0 {
		return nil
	}
	p := cores / limitCores * 100
	return &p
}
