package fleetfanout

import (
	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
)

// Nodes is how many nodes cfg configures (Docker hosts and Kubernetes
// clusters): what the default shard count is sized on.
func Nodes(cfg *config.Config) int { return len(cfg.Docker.Hosts) + len(cfg.Kubernetes.Clusters) }

// QueueAt is the shard queue at url on api; nil (no fan-out) when url is
// empty.
func QueueAt(api sqsqueue.API, url string) ShardQueue {
	if url == "" {
		return nil
	}
	return sqsqueue.New(api, url)
}
