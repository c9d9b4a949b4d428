package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.StatsReader = (*Runtime)(nil)

// Stats reads ref's container usage from its engine (see
// runtime.StatsReader): one answer of the stats endpoint with the previous
// sample included, so that the CPU in use is the engine's own one-second
// window (the call takes about that long).
func (r *Runtime) Stats(ctx context.Context, ref runtime.Ref) (runtime.Stats, error) {
	h, name, err := r.locate(ctx, "stats", ref)
	if err != nil {
		return runtime.Stats{}, err
	}
	node := h.cfg.Name
	in, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return runtime.Stats{}, classify(err, "stats", ref.InstanceID, node)
	}
	if st := in.Container.State; st == nil || !st.Running || st.Paused {
		return runtime.Stats{}, runtime.Errorf(runtime.ErrConflict, "stats", ref.InstanceID, node, "the container is not running")
	}
	res, err := h.cli.ContainerStats(ctx, name, client.ContainerStatsOptions{IncludePreviousSample: true})
	if err != nil {
		return runtime.Stats{}, classify(err, "stats", ref.InstanceID, node)
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return runtime.Stats{}, runtime.NewError(runtime.ErrFailed, "stats", ref.InstanceID, node, fmt.Errorf("reading the engine's stats: %w", err))
	}
	var limitCores float64
	if in.Container.HostConfig != nil {
		limitCores = float64(in.Container.HostConfig.NanoCPUs) / 1e9
	}
	return statsFrom(s, limitCores), nil
}

// statsFrom converts the engine's answer. CPU: the usage between the two
// samples over the time between them. Memory: the usage without the
// inactive page cache, as `docker stats` shows it (cgroup v1 names it
// total_inactive_file, v2 inactive_file).
func statsFrom(s container.StatsResponse, limitCores float64) runtime.Stats {
	out := runtime.Stats{At: s.Read}
	if win := s.Read.Sub(s.PreRead); !s.PreRead.IsZero() && win > 0 && s.CPUStats.CPUUsage.TotalUsage >= s.PreCPUStats.CPUUsage.TotalUsage {
		out.CPU.Cores = float64(s.CPUStats.CPUUsage.TotalUsage-s.PreCPUStats.CPUUsage.TotalUsage) / float64(win.Nanoseconds())
	}
	out.CPU.PercentOfLimit = runtime.PercentOf(out.CPU.Cores, limitCores)
	out.Memory = memoryFrom(s.MemoryStats)
	if len(s.Networks) > 0 {
		var n runtime.NetworkStats
		for _, ifc := range s.Networks {
			n.RxBytes += ifc.RxBytes
			n.TxBytes += ifc.TxBytes
		}
		out.Network = &n
	}
	if s.BlkioStats.IoServiceBytesRecursive != nil {
		var b runtime.BlockIOStats
		for _, e := range s.BlkioStats.IoServiceBytesRecursive {
			switch strings.ToLower(e.Op) {
			case "read":
				b.ReadBytes += e.Value
			case "write":
				b.WriteBytes += e.Value
			}
		}
		out.BlockIO = &b
	}
	if p := s.PidsStats.Current; p > 0 {
		out.PIDs = &p
	}
	return out
}

func memoryFrom(m container.MemoryStats) runtime.MemoryStats {
	out := runtime.MemoryStats{UsageBytes: m.Usage}
	inactive, ok := m.Stats["total_inactive_file"]
	if !ok {
		inactive = m.Stats["inactive_file"]
	}
	if inactive < out.UsageBytes {
		out.UsageBytes -= inactive
	}
	if m.Limit > 0 {
		limit := m.Limit
		out.LimitBytes = &limit
	}
	if n, ok := m.Stats["oom_kill"]; ok {
		out.OOMKills = &n
	}
	return out
}
