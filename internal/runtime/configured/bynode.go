package configured

import (
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
)

// Node is one node of a configuration (a Docker host, a Kubernetes
// cluster) with a runtime of its own that reaches only it.
type Node struct {
	// Kind is the runtime's kind (container.RuntimeDocker, …).
	Kind string
	// Name is the node's name (docker.hosts[].name, kubernetes.clusters[].name).
	Name    string
	Runtime runtime.Runtime
}

// ByNode builds one runtime per node of cfg, Docker hosts first: what a
// caller that must keep one node's trouble from the others uses (the
// watcher function holds each node's event stream on its own, so a host
// that does not answer costs that host only and is reported by name).
// hint is Build's.
func ByNode(cfg *config.Config, log *slog.Logger, hint func(error) error) ([]Node, error) {
	var out []Node
	for _, h := range cfg.Docker.Hosts {
		one := *cfg
		one.Docker.Hosts = []config.DockerHost{h}
		one.Kubernetes.Clusters = nil
		rs, err := Build(&one, log, hint)
		if err != nil {
			return nil, fmt.Errorf("docker host %s: %w", h.Name, err)
		}
		out = append(out, Node{Kind: rs.Docker.Kind(), Name: h.Name, Runtime: rs.Docker})
	}
	for _, c := range cfg.Kubernetes.Clusters {
		one := *cfg
		one.Docker.Hosts = nil
		one.Kubernetes.Clusters = []config.KubernetesCluster{c}
		rs, err := Build(&one, log, hint)
		if err != nil {
			return nil, fmt.Errorf("kubernetes cluster %s: %w", c.Name, err)
		}
		out = append(out, Node{Kind: rs.Kubernetes.Kind(), Name: c.Name, Runtime: rs.Kubernetes})
	}
	return out, nil
}
