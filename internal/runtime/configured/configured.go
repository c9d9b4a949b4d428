// Package configured builds the runtimes a configuration has nodes for, in
// one place for every entry point (`berth serve`, the worker and reconciler
// functions): Docker when docker.hosts lists a host, Kubernetes when
// kubernetes.clusters lists a cluster. Any mix is valid, and so is none: a
// deployment without a runtime starts, and what needs one is refused (the
// manager's ErrNoRuntime) or fails at once with the reason, rather than
// the process stopping at start-up.
package configured

import (
	"fmt"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
)

// Runtimes are the runtimes of one configuration.
type Runtimes struct {
	// Docker is nil without docker.hosts.
	Docker *docker.Runtime
	// Kubernetes is nil without kubernetes.clusters.
	Kubernetes *kubernetes.Runtime
}

// Build makes the runtimes cfg has nodes for. It dials nothing. hint, when
// set, adds to an error where the failing keys come from (the Lambda
// functions read them from a secret or a file).
func Build(cfg *config.Config, log *slog.Logger, hint func(error) error) (*Runtimes, error) {
	if hint == nil {
		hint = func(err error) error { return err }
	}
	rs := &Runtimes{}
	if len(cfg.Docker.Hosts) > 0 {
		rt, err := docker.New(cfg.Docker, docker.Options{Scope: cfg.Docker.Scope, Logger: log})
		if err != nil {
			return nil, hint(fmt.Errorf("docker.hosts: %w", err))
		}
		rs.Docker = rt
	}
	kube, err := kubernetes.FromConfig(cfg, log)
	if err != nil {
		rs.Close()
		return nil, hint(fmt.Errorf("kubernetes.clusters: %w", err))
	}
	rs.Kubernetes = kube
	return rs, nil
}

// All lists the runtimes built, Docker first; empty when none is.
func (rs *Runtimes) All() []runtime.Runtime {
	var out []runtime.Runtime
	if rs.Docker != nil {
		out = append(out, rs.Docker)
	}
	if rs.Kubernetes != nil {
		out = append(out, rs.Kubernetes)
	}
	return out
}

// Resolver is a runtime.Resolver over All: a kind with no runtime is
// runtime.ErrInvalid ("no … runtime is configured"), which fails the
// operation at once.
func (rs *Runtimes) Resolver() (*runtime.Resolver, error) {
	return runtime.NewResolver(rs.All()...)
}

// Close releases the Docker clients' idle connections.
func (rs *Runtimes) Close() {
	if rs.Docker != nil {
		_ = rs.Docker.Close()
	}
}
