package configured_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime/configured"
)

// TestByNode: one runtime per node, Docker hosts first, each reaching only
// its own node: the runtime of a host that does not answer fails its ping
// by itself, naming only that host.
func TestByNode(t *testing.T) {
	cfg := config.Default()
	cfg.Docker.Hosts = []config.DockerHost{{Name: "h1", Endpoint: "unix:///run/berth-test/h1.sock"},
		{Name: "h2", Endpoint: "unix:///run/berth-test/h2.sock"}}
	cfg.Kubernetes.Clusters = []config.KubernetesCluster{{Name: "eks-prod", EKSCluster: "prod", Region: "eu-west-1", Namespace: "berth"}}
	nodes, err := configured.ByNode(cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, n.Kind+"/"+n.Name)
	}
	if want := []string{"docker/h1", "docker/h2", "kubernetes/eks-prod"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("nodes %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = nodes[1].Runtime.Ping(ctx)
	if err == nil {
		t.Fatal("a host without an engine answered its ping")
	}
	if msg := err.Error(); !strings.Contains(msg, "h2") || strings.Contains(msg, "h1") {
		t.Errorf("ping of h2: %v; want h2 named and h1 not", err)
	}
	if len(cfg.Docker.Hosts) != 2 || len(cfg.Kubernetes.Clusters) != 1 {
		t.Errorf("ByNode changed the configuration: %+v", cfg.Docker.Hosts)
	}
}
