package configured_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
)

// TestBuild: every mix of runtimes builds, none included, and the resolver
// answers an unconfigured kind with runtime.ErrInvalid (an operation that
// fails at once) rather than the process failing at start-up. Nothing is
// dialled: the EKS cluster is described on first use.
func TestBuild(t *testing.T) {
	docker := []config.DockerHost{{Name: "h1", Endpoint: "unix:///run/berth-test/none.sock"}}
	eks := []config.KubernetesCluster{{Name: "eks-prod", EKSCluster: "prod", Region: "eu-west-1", Namespace: "berth"}}
	for _, tc := range []struct {
		name     string
		hosts    []config.DockerHost
		clusters []config.KubernetesCluster
		want     []string
	}{
		{"none", nil, nil, nil},
		{"docker only", docker, nil, []string{"docker"}},
		{"eks only", nil, eks, []string{"kubernetes"}},
		{"mixed", docker, eks, []string{"docker", "kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Docker.Hosts, cfg.Kubernetes.Clusters = tc.hosts, tc.clusters
			rts, err := configured.Build(cfg, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			defer rts.Close()
			var kinds []string
			for _, rt := range rts.All() {
				kinds = append(kinds, rt.Kind())
			}
			if !slices.Equal(kinds, tc.want) {
				t.Errorf("runtimes %v, want %v", kinds, tc.want)
			}
			if (rts.Docker != nil) != slices.Contains(tc.want, "docker") || (rts.Kubernetes != nil) != slices.Contains(tc.want, "kubernetes") {
				t.Errorf("Docker %v, Kubernetes %v", rts.Docker, rts.Kubernetes)
			}
			res, err := rts.Resolver()
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range []string{"docker", "kubernetes"} {
				_, err := res.Kind(kind)
				if slices.Contains(tc.want, kind) != (err == nil) {
					t.Errorf("resolver %s: %v", kind, err)
				}
				if err != nil && (!errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "no \""+kind+"\" runtime is configured")) {
					t.Errorf("resolver %s: %v, want ErrInvalid naming the runtime", kind, err)
				}
			}
		})
	}
	// A bad node is still an error at start-up, with where it comes from.
	cfg := config.Default()
	cfg.Kubernetes.Clusters = []config.KubernetesCluster{{Name: "a/b", EKSCluster: "prod"}}
	if _, err := configured.Build(cfg, nil, func(err error) error { return errors.New(err.Error() + " (from the secret)") }); err == nil ||
		!strings.Contains(err.Error(), "kubernetes.clusters") || !strings.Contains(err.Error(), "from the secret") {
		t.Errorf("bad cluster: %v", err)
	}
}
