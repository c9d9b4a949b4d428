package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
)

// cluster is one configured cluster and its client, made on first use: an
// EKS cluster needs an AWS call to find its endpoint, which New must not
// make (a cluster that is down must not stop berth from starting).
type cluster struct {
	cfg  config.KubernetesCluster
	opts Options

	mu sync.Mutex
	cs k8s.Interface
	// rc is the configuration cs was made from: exec's streams
	// (remotecommand) are made from it.
	rc *rest.Config

	// pods, while Watch runs, is its informer's copy of berth's Pods
	// here, which placement reads instead of listing (podCache).
	pods atomic.Pointer[podCache]
}

var _ runtime.Node = (*cluster)(nil)

// NodeName is the cluster's configured name.
func (c *cluster) NodeName() string { return c.cfg.Name }

// NodeCapacity is the cluster's configured capacity (0: unbounded).
func (c *cluster) NodeCapacity() int { return c.cfg.Capacity }

// NodeLabels are the cluster's configured labels.
func (c *cluster) NodeLabels() map[string]string { return c.cfg.Labels }

// NodeRoots are the cluster's allowed_host_path_roots.
func (c *cluster) NodeRoots() []string { return c.cfg.AllowedHostPathRoots }

func newCluster(cc config.KubernetesCluster, opts Options) (*cluster, error) {
	cl := &cluster{cfg: cc, opts: opts}
	if cc.EKSCluster != "" {
		return cl, nil
	}
	// A kubeconfig or the in-cluster config is local: read it now, so a
	// wrong path or context is a start-up error rather than a failed create.
	rc, err := kubeRESTConfig(cc)
	if err != nil {
		return nil, err
	}
	restConfigDefaults(rc, opts)
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("making the client: %w", err)
	}
	cl.cs, cl.rc = cs, rc
	return cl, nil
}

// kubeRESTConfig reads the kubeconfig (and context) the cluster names, or
// the in-cluster service account's config when it names none.
func kubeRESTConfig(cc config.KubernetesCluster) (*rest.Config, error) {
	if cc.Kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig given and not running in a cluster: %w", err)
		}
		return rc, nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cc.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cc.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cc.Kubeconfig, err)
	}
	return rc, nil
}

// client returns the cluster's clientset, making it on first use for EKS.
// A failure is not remembered: the next call tries again.
func (c *cluster) client(ctx context.Context) (k8s.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	rc, err := eksRESTConfig(ctx, c.cfg, c.opts.AWS)
	if err != nil {
		return nil, err
	}
	restConfigDefaults(rc, c.opts)
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("making the client: %w", err)
	}
	c.cs, c.rc = cs, rc
	return cs, nil
}

// restConfig is the configuration of the cluster's client (made as
// client makes it).
func (c *cluster) restConfig(ctx context.Context) (*rest.Config, error) {
	if _, err := c.client(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rc, nil
}
