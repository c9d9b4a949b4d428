package kubernetes

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-io/berth/internal/runtime"
)

// byInstance indexes a podCache by the berth.instance-id label.
const byInstance = "instance"

// podCache is a cluster's watch-fed copy of berth's Pods (of this scope):
// the informer Watch runs, which placement reads instead of listing the
// cluster on every create. It answers only while it is usable: synced, and
// the informer's last list or watch call reached the API server. Any
// failed call (a refused connection, a watch that breaks and cannot be
// opened again, an error inside the stream) makes it unusable until a
// later call succeeds, and placement lists the cluster itself meanwhile,
// so a cluster that does not answer is still reported unavailable and the
// instance stays pending. What it cannot see at once is an API server that
// stops answering without closing the connection: HTTP/2's health pings
// (client-go's default, about 45 s) end such a watch.
type podCache struct {
	inf cache.SharedIndexInformer
	// failed: the last list or watch call of the informer failed.
	failed atomic.Bool
}

// newPodCache makes the informer of berth's Pods matching selector in
// pods' namespace. Run it with inf.RunWithContext.
func newPodCache(pods typedcorev1.PodInterface, selector string) *podCache {
	c := &podCache{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.LabelSelector = selector
			l, err := pods.List(ctx, o)
			c.failed.Store(err != nil)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			w, err := pods.Watch(ctx, o)
			c.failed.Store(err != nil)
			return w, err
		},
	}
	c.inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{byInstance: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{p.Labels[runtime.LabelInstanceID]}, nil
		}
		return nil, nil
	}})
	// Errors inside a watch stream (a version too old, a decoding
	// failure) reach the handler, not the calls above.
	_ = c.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		c.failed.Store(true)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return c
}

// usable: synced, and the informer's last call reached the API server.
func (c *podCache) usable() bool { return c.inf.HasSynced() && !c.failed.Load() }

// pods are copies of the cached Pods: instanceID's only when it is not
// empty, else all.
func (c *podCache) pods(instanceID string) []corev1.Pod {
	var objs []any
	if instanceID != "" {
		objs, _ = c.inf.GetIndexer().ByIndex(byInstance, instanceID)
	} else {
		objs = c.inf.GetStore().List()
	}
	out := make([]corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, *p.DeepCopy())
		}
	}
	return out
}
