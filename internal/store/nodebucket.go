package store

import (
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
)

// NodeBucket is the fleetshard bucket an instance is listed in by
// ListActiveInBucket, and whether it is listed at all: an active
// (non-terminal) instance is, by its runtime kind ("" is Docker, as
// container.RuntimePauses reads it) and its node ("" until it is placed);
// an ended one is not. Both backends key their node-bucket index by this
// one function, so a write that places, ends or removes an instance moves
// it between buckets the same way on each.
func NodeBucket(in container.Instance) (bucket int, listed bool) {
	if in.Status == "" || in.Status.Terminal() {
		return 0, false
	}
	kind := in.RuntimeKind()
	if kind == "" {
		kind = container.RuntimeDocker
	}
	return fleetshard.BucketOf(kind, fleetNode(kind, in.RuntimeNodeName)), true
}

// fleetNode is the node a runtime_node_name is on in the fleet's sense,
// the one configured.ForShard and the watcher shard by: a Docker host's
// name; for Kubernetes the cluster, as runtime_node_name is
// "<cluster>/<Kubernetes node>" once the Pod is scheduled.
func fleetNode(kind, runtimeNode string) string {
	if kind != container.RuntimeKubernetes {
		return runtimeNode
	}
	cluster, _, _ := strings.Cut(runtimeNode, "/")
	return cluster
}
