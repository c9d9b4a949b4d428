package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/hostpolicy"
)

// Place returns the cluster for inst (see runtime.Runtime.Place).
func (r *Runtime) Place(ctx context.Context, inst berth.Instance) (string, error) {
	if inst.RuntimeNodeName != "" {
		if _, err := r.pinned(inst); err != nil {
			return "", err
		}
		return inst.RuntimeNodeName, nil
	}
	p, err := r.place(ctx, inst)
	if err != nil {
		return "", err
	}
	p.release()
	if p.existing != nil {
		return nodeName(p.cluster, p.existing), nil
	}
	return p.cluster.cfg.Name, nil
}

// pinned is the cluster an instance already has, checked to still take it.
func (r *Runtime) pinned(inst berth.Instance) (*cluster, error) {
	cl, err := r.clusterFor("place", inst.ID, inst.RuntimeNodeName)
	if err != nil {
		return nil, err
	}
	if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, cl.cfg.AllowedHostPathRoots); err != nil {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, cl.cfg.Name, err)
	}
	return cl, nil
}

// placement is place's answer: a cluster, and either the Pod an earlier
// attempt already made there or a reservation to release once created.
type placement struct {
	cluster  *cluster
	existing *corev1.Pod
	release  func()
}

// place chooses a cluster for an instance that has none (runtime.Choose).
func (r *Runtime) place(ctx context.Context, inst berth.Instance) (placement, error) {
	cands, err := r.candidates(inst)
	if err != nil {
		return placement{}, err
	}
	c, err := runtime.Choose(ctx, &r.reserved, inst.ID, "kubernetes cluster", cands,
		func(ctx context.Context, cl *cluster, count bool) runtime.Load[corev1.Pod] {
			return r.load(ctx, cl, inst.ID, count)
		})
	return placement{cluster: c.Node, existing: c.Existing, release: c.Release}, err
}

// candidates are the clusters whose labels include every
// scheduling.host_labels pair and whose allowed roots admit every host
// path. None is invalid: no retry makes a cluster appear.
func (r *Runtime) candidates(inst berth.Instance) ([]*cluster, error) {
	want := inst.Spec.Scheduling.HostLabels
	var labelled []*cluster
	for _, cl := range r.clusters {
		if runtime.HasLabels(cl.cfg.Labels, want) {
			labelled = append(labelled, cl)
		}
	}
	if len(labelled) == 0 {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, "",
			"no kubernetes cluster has the labels %v", runtime.SortedPairs(want))
	}
	var out []*cluster
	var firstErr error
	for _, cl := range labelled {
		if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, cl.cfg.AllowedHostPathRoots); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("cluster %s: %w", cl.cfg.Name, err)
			}
			continue
		}
		out = append(out, cl)
	}
	if len(out) == 0 {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, "", firstErr)
	}
	return out, nil
}

// load counts berth's active Pods (of this scope) in cl and finds inst's;
// without count, it lists inst's Pod only (runtime.Choose).
func (r *Runtime) load(ctx context.Context, cl *cluster, instanceID string, count bool) runtime.Load[corev1.Pod] {
	only := ""
	if !count {
		only = instanceID
	}
	pods, err := r.listPods(ctx, cl, only)
	if err != nil {
		return runtime.Load[corev1.Pod]{Err: err}
	}
	var l runtime.Load[corev1.Pod]
	for i := range pods {
		p := &pods[i]
		if runtime.Owns(p.Labels, instanceID, r.scope) && p.DeletionTimestamp == nil {
			l.Existing = p
		}
		if p.DeletionTimestamp == nil && !ended(p) {
			l.Active++
		}
	}
	return l
}
