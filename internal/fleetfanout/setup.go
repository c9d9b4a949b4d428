package fleetfanout

import (
	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
)

// FromConfig is the Loop named name over cfg's fleet: its shard count
// from fleet.shards and the nodes cfg configures (Docker hosts and
// Kubernetes clusters: what the default count is sized on), fleet.period,
// and q as its shard queue. The caller sets Whole, Shard and Logger.
func FromConfig(cfg *config.Config, name string, q ShardQueue) *Loop {
	return &Loop{Name: name, Shards: cfg.Fleet.Shards, Nodes: len(cfg.Docker.Hosts) + len(cfg.Kubernetes.Clusters),
		Period: cfg.Fleet.Period, Queue: q}
}

// QueueAt is the shard queue at url on api; nil (no fan-out) when url is
// empty.
func QueueAt(api sqsqueue.API, url string) ShardQueue {
	if url == "" {
		return nil
	}
	return sqsqueue.New(api, url)
}
