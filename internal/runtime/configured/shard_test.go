package configured_test

import (
	"fmt"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/runtime/configured"
)

// TestForShard: under any count every configured node is in exactly one
// shard's configuration, the one fleetshard says owns it; the whole shard
// is the configuration itself, and the original is left as it was.
func TestForShard(t *testing.T) {
	cfg := config.Default()
	for i := range 40 {
		cfg.Docker.Hosts = append(cfg.Docker.Hosts, config.DockerHost{Name: fmt.Sprintf("h%d", i), Endpoint: "unix:///run/berth-test/none.sock"})
	}
	cfg.Kubernetes.Clusters = []config.KubernetesCluster{{Name: "eks-a"}, {Name: "eks-b"}, {Name: "eks-c"}}
	if configured.ForShard(cfg, fleetshard.Whole()) != cfg {
		t.Fatal("the whole shard's configuration is not the configuration")
	}
	for _, n := range []int{2, 3, 7} {
		owners := map[string]int{}
		for _, s := range fleetshard.All(n) {
			one := configured.ForShard(cfg, s)
			for _, h := range one.Docker.Hosts {
				if !s.OwnsNode("docker", h.Name) {
					t.Fatalf("shard %v holds host %s it does not own", s, h.Name)
				}
				owners["docker/"+h.Name]++
			}
			for _, c := range one.Kubernetes.Clusters {
				if !s.OwnsNode("kubernetes", c.Name) {
					t.Fatalf("shard %v holds cluster %s it does not own", s, c.Name)
				}
				owners["kubernetes/"+c.Name]++
			}
		}
		if len(owners) != len(cfg.Docker.Hosts)+len(cfg.Kubernetes.Clusters) {
			t.Fatalf("%d shards hold %d of %d nodes", n, len(owners), len(cfg.Docker.Hosts)+len(cfg.Kubernetes.Clusters))
		}
		for node, k := range owners {
			if k != 1 {
				t.Fatalf("%d shards: %s is in %d", n, node, k)
			}
		}
	}
	if len(cfg.Docker.Hosts) != 40 || len(cfg.Kubernetes.Clusters) != 3 {
		t.Fatal("ForShard changed the configuration")
	}
}
