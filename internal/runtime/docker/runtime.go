package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Runtime = (*Runtime)(nil)

// Options tune a Runtime beyond what config holds.
type Options struct {
	// Scope, when set, is put on every container as runtime.LabelScope, and
	// List, Watch and the load count see only containers of that scope: two
	// berth deployments (or two test runs) can share hosts without counting
	// or reconciling each other's containers.
	Scope string
	// Logger receives operational messages (never env values); slog.Default
	// when nil.
	Logger *slog.Logger
	// ECR gives authorization tokens for ECR registries. When nil, an AWS
	// SDK client per region is made on first use, with the SDK's default
	// credentials (the Lambda role, the instance profile, the environment).
	ECR ECRTokenGetter
}

// Runtime places and runs berth's containers on a set of Docker hosts.
type Runtime struct {
	hosts  []*host // in config order: ties in placement go to the first
	byName map[string]*host
	scope  string
	log    *slog.Logger
	auth   *registryAuth

	// placer places instances on hosts; its view of their loads counts
	// what this process placed since it last listed them, which keeps
	// concurrent creates from all picking the same least-loaded host or
	// overfilling it.
	placer *hostPlacer
}

// host is one Docker engine and its client.
type host struct {
	cfg config.DockerHost
	cli *client.Client
}

var _ runtime.Node = (*host)(nil)

// NodeName is the host's configured name.
func (h *host) NodeName() string { return h.cfg.Name }

// NodeCapacity is the host's configured capacity (0: unbounded).
func (h *host) NodeCapacity() int { return h.cfg.Capacity }

// NodeLabels are the host's configured labels.
func (h *host) NodeLabels() map[string]string { return h.cfg.Labels }

// NodeRoots are the host's allowed_bind_roots.
func (h *host) NodeRoots() []string { return h.cfg.AllowedBindRoots }

// New makes a Runtime for the hosts of cfg. It dials nothing: a host that is
// down is found out by the calls that need it.
func New(cfg config.Docker, opts Options) (*Runtime, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("docker runtime: no hosts configured")
	}
	r := &Runtime{
		byName: make(map[string]*host, len(cfg.Hosts)),
		scope:  opts.Scope,
		log:    opts.Logger,
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	for _, hc := range cfg.Hosts {
		if hc.Name == "" {
			return nil, fmt.Errorf("docker runtime: host with endpoint %q has no name", hc.Endpoint)
		}
		if _, dup := r.byName[hc.Name]; dup {
			return nil, fmt.Errorf("docker runtime: two hosts named %q", hc.Name)
		}
		cli, err := newClient(hc)
		if err != nil {
			return nil, fmt.Errorf("docker runtime: host %s: %w", hc.Name, err)
		}
		h := &host{cfg: hc, cli: cli}
		r.hosts = append(r.hosts, h)
		r.byName[hc.Name] = h
	}
	r.auth = newRegistryAuth(cfg.Registries, opts.ECR)
	r.placer = r.newPlacer()
	return r, nil
}

// Kind is container.RuntimeDocker.
func (r *Runtime) Kind() string { return container.RuntimeDocker }

// Hosts returns the host names in config order.
func (r *Runtime) Hosts() []string {
	out := make([]string, len(r.hosts))
	for i, h := range r.hosts {
		out[i] = h.cfg.Name
	}
	return out
}

// Client returns the Engine API client of a host (nil if unknown): for the
// checks and tools that need the engine beyond the Runtime contract.
func (r *Runtime) Client(node string) *client.Client {
	if h := r.byName[node]; h != nil {
		return h.cli
	}
	return nil
}

// Scope is the scope label this runtime puts on, and sees, its containers.
func (r *Runtime) Scope() string { return r.scope }

// Close releases the clients' idle connections.
func (r *Runtime) Close() error {
	var errs []error
	for _, h := range r.hosts {
		errs = append(errs, h.cli.Close())
	}
	return errors.Join(errs...)
}

// Ping checks every host in parallel.
func (r *Runtime) Ping(ctx context.Context) error {
	errs := make([]error, len(r.hosts))
	var wg sync.WaitGroup
	for i, h := range r.hosts {
		wg.Go(func() {
			if _, err := h.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
				errs[i] = classify(err, "ping", "", h.cfg.Name)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hostFor returns the host a Ref names.
func (r *Runtime) hostFor(op string, ref runtime.Ref) (*host, error) {
	h := r.byName[ref.Node]
	if h == nil {
		return nil, runtime.Errorf(runtime.ErrInvalid, op, ref.InstanceID, ref.Node, "no docker host named %q is configured", ref.Node)
	}
	return h, nil
}
