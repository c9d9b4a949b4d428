package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Runtime = (*Runtime)(nil)

// Options tune a Runtime beyond what config holds.
type Options struct {
	// Scope, when set, is put on every Pod as runtime.LabelScope, and List,
	// Watch and the load count see only Pods of that scope. It must be a
	// valid Kubernetes label value.
	Scope string
	// Logger receives operational messages (never env values); slog.Default
	// when nil.
	Logger *slog.Logger
	// Registries are the pull credentials (docker.registries): the ones
	// with a password become a dockerconfigjson Secret in each cluster's
	// namespace, named in every Pod's imagePullSecrets. ECR registries are
	// left to the nodes' IAM role, as EKS does.
	Registries []config.Registry
	// WrapTransport, when set, wraps every cluster's HTTP transport (to
	// count or trace API calls).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// AWS builds the EKS and STS clients for EKS clusters; when nil, the
	// SDK's default configuration for the cluster's region is loaded.
	AWS EKSAPIFactory
}

// Runtime places and runs berth's containers as Pods on a set of clusters.
type Runtime struct {
	clusters []*cluster // in config order: ties in placement go to the first
	byName   map[string]*cluster
	scope    string
	log      *slog.Logger
	pull     *pullSecret

	// placer places instances on clusters; its view of their loads
	// counts what this process placed since it last listed them, which
	// keeps concurrent creates from all picking the same cluster.
	placer *clusterPlacer
}

// New makes a Runtime for the clusters of cfg. It dials nothing: a cluster
// that is down (or an EKS cluster not yet described) is found out by the
// calls that need it.
func New(cfg config.Kubernetes, opts Options) (*Runtime, error) {
	if len(cfg.Clusters) == 0 {
		return nil, errors.New("kubernetes runtime: no clusters configured")
	}
	if opts.Scope != "" {
		if errs := validation.IsValidLabelValue(opts.Scope); len(errs) > 0 {
			return nil, fmt.Errorf("kubernetes runtime: scope %q is not a label value: %s", opts.Scope, strings.Join(errs, "; "))
		}
	}
	r := &Runtime{
		byName: make(map[string]*cluster, len(cfg.Clusters)),
		scope:  opts.Scope,
		log:    opts.Logger,
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	pull, err := newPullSecret(opts.Registries)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	r.pull = pull
	for _, cc := range cfg.Clusters {
		if cc.Name == "" || strings.Contains(cc.Name, "/") {
			return nil, fmt.Errorf("kubernetes runtime: cluster name %q: want a non-empty name without '/'", cc.Name)
		}
		if _, dup := r.byName[cc.Name]; dup {
			return nil, fmt.Errorf("kubernetes runtime: two clusters named %q", cc.Name)
		}
		if cc.Namespace == "" {
			cc.Namespace = config.DefaultNamespace
		}
		cl, err := newCluster(cc, opts)
		if err != nil {
			return nil, fmt.Errorf("kubernetes runtime: cluster %s: %w", cc.Name, err)
		}
		r.clusters = append(r.clusters, cl)
		r.byName[cc.Name] = cl
	}
	r.placer = r.newPlacer()
	return r, nil
}

// Kind is container.RuntimeKubernetes.
func (r *Runtime) Kind() string { return container.RuntimeKubernetes }

// Clusters returns the cluster names in config order.
func (r *Runtime) Clusters() []string {
	out := make([]string, len(r.clusters))
	for i, c := range r.clusters {
		out[i] = c.cfg.Name
	}
	return out
}

// Scope is the scope label this runtime puts on, and sees, its Pods.
func (r *Runtime) Scope() string { return r.scope }

// Clientset returns the client of a cluster, connecting it if needed: for
// checks and tools beyond the Runtime contract.
func (r *Runtime) Clientset(ctx context.Context, name string) (k8s.Interface, string, error) {
	cl := r.byName[name]
	if cl == nil {
		return nil, "", fmt.Errorf("no kubernetes cluster named %q is configured", name)
	}
	cs, err := cl.client(ctx)
	return cs, cl.cfg.Namespace, err
}

// Ping asks every cluster's API server for its version, in parallel.
func (r *Runtime) Ping(ctx context.Context) error {
	errs := make([]error, len(r.clusters))
	var wg sync.WaitGroup
	for i, cl := range r.clusters {
		wg.Go(func() {
			cs, err := cl.client(ctx)
			if err == nil {
				err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
			}
			if err != nil {
				errs[i] = classify(err, "ping", "", cl.cfg.Name)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clusterFor returns the cluster a node name ("<cluster>" or
// "<cluster>/<kubernetes node>") names.
func (r *Runtime) clusterFor(op, instance, node string) (*cluster, error) {
	name, _, _ := strings.Cut(node, "/")
	cl := r.byName[name]
	if cl == nil {
		return nil, runtime.Errorf(runtime.ErrInvalid, op, instance, node, "no kubernetes cluster named %q is configured", name)
	}
	return cl, nil
}

// podName is the Pod's name for an instance: Kubernetes names are lower
// case, instance ids (ULIDs) upper case.
func podName(instanceID string) string { return strings.ToLower(runtime.ObjectName(instanceID)) }

// restConfigDefaults are what every cluster's client shares: berth's calls
// are few and small, so client-go's default rate limit (5 QPS) would only
// add latency under a burst of creates.
func restConfigDefaults(rc *rest.Config, opts Options) {
	rc.QPS, rc.Burst = DefaultQPS, DefaultBurst
	rc.UserAgent = "berth"
	if opts.WrapTransport != nil {
		rc.Wrap(opts.WrapTransport)
	}
}

// Client-side rate limits per cluster. Defaults to 50 requests per second
// with bursts of 100.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// FromConfig is the Kubernetes runtime berth's config asks for, or nil when
// kubernetes.clusters is empty. One scope labels a deployment's objects on
// every runtime, so Pods take docker.scope; their image pull credentials
// come from docker.registries.
func FromConfig(cfg *config.Config, log *slog.Logger) (*Runtime, error) {
	if len(cfg.Kubernetes.Clusters) == 0 {
		return nil, nil
	}
	return New(cfg.Kubernetes, Options{Scope: cfg.Docker.Scope, Logger: log, Registries: cfg.Docker.Registries})
}
