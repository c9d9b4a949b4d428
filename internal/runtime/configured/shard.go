package configured

import (
	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
)

// ForShard is cfg with only the nodes shard s owns (fleetshard
// Shard.OwnsNode): its docker.hosts and kubernetes.clusters filtered, the
// rest shared with cfg (not changed). Build and ByNode over it give a
// shard's runtimes: every entry point of a sharded loop (the reconciler's
// and the watcher's functions, the benchmarks) filters the fleet here, so
// they agree on which node is whose. A whole shard is cfg itself.
func ForShard(cfg *config.Config, s fleetshard.Shard) *config.Config {
	if s.IsWhole() {
		return cfg
	}
	one := *cfg
	one.Docker.Hosts = nil
	for _, h := range cfg.Docker.Hosts {
		if s.OwnsNode(container.RuntimeDocker, h.Name) {
			one.Docker.Hosts = append(one.Docker.Hosts, h)
		}
	}
	one.Kubernetes.Clusters = nil
	for _, c := range cfg.Kubernetes.Clusters {
		if s.OwnsNode(container.RuntimeKubernetes, c.Name) {
			one.Kubernetes.Clusters = append(one.Kubernetes.Clusters, c)
		}
	}
	return &one
}
