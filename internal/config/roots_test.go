package config_test

import (
	"slices"
	"testing"

	"github.com/berth-io/berth/internal/config"
)

// TestHostPathRoots: what a template may bind at all is the union of every
// node's roots, Docker hosts' and clusters' alike, each once: a bind under
// a cluster's root is not refused for want of a Docker host allowing it.
func TestHostPathRoots(t *testing.T) {
	cfg := config.Config{
		Docker: config.Docker{Hosts: []config.DockerHost{
			{Name: "a", AllowedBindRoots: []string{"/srv/a", "/shared"}},
			{Name: "b", AllowedBindRoots: []string{"/shared"}},
		}},
		Kubernetes: config.Kubernetes{Clusters: []config.KubernetesCluster{
			{Name: "k1", AllowedHostPathRoots: []string{"/srv/k1", "/shared"}},
		}},
	}
	want := []string{"/srv/a", "/shared", "/srv/k1"}
	if got := cfg.HostPathRoots(); !slices.Equal(got, want) {
		t.Errorf("HostPathRoots() = %v, want %v", got, want)
	}
	if got, want := cfg.Docker.BindRoots(), []string{"/srv/a", "/shared"}; !slices.Equal(got, want) {
		t.Errorf("Docker.BindRoots() = %v, want %v", got, want)
	}
}
