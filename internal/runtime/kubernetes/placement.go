package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
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
	if err := hostPathsAllowed(inst.Spec.Volumes, cl.cfg.AllowedHostPathRoots); err != nil {
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

type clusterLoad struct {
	active   int
	existing *corev1.Pod
	err      error
}

// place chooses a cluster for an instance that has none. It lists berth's
// Pods in every candidate cluster at once, which gives both the load and
// any Pod an earlier attempt made for this instance (adopted rather than
// made twice), then takes the least-loaded cluster with room.
func (r *Runtime) place(ctx context.Context, inst berth.Instance) (placement, error) {
	cands, err := r.candidates(inst)
	if err != nil {
		return placement{}, err
	}
	loads := make([]clusterLoad, len(cands))
	var wg sync.WaitGroup
	for i, cl := range cands {
		wg.Go(func() { loads[i] = r.load(ctx, cl, inst.ID) })
	}
	wg.Wait()

	var errs []error
	for i, l := range loads {
		if l.existing != nil {
			return placement{cluster: cands[i], existing: l.existing, release: func() {}}, nil
		}
		if l.err != nil {
			errs = append(errs, l.err)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	best, bestLoad := -1, 0
	for i, cl := range cands {
		if loads[i].err != nil {
			continue
		}
		n := loads[i].active + r.reserved[cl.cfg.Name]
		if cl.cfg.Capacity > 0 && n >= cl.cfg.Capacity {
			continue
		}
		if best < 0 || n < bestLoad {
			best, bestLoad = i, n
		}
	}
	if best < 0 {
		if len(errs) == len(cands) {
			return placement{}, runtime.NewError(runtime.ErrUnavailable, "place", inst.ID, "",
				fmt.Errorf("no matching kubernetes cluster answered: %w", errors.Join(errs...)))
		}
		return placement{}, runtime.Errorf(runtime.ErrUnavailable, "place", inst.ID, "",
			"every matching kubernetes cluster that answered is full (%s)", clusterNames(cands))
	}
	cl := cands[best]
	r.reserved[cl.cfg.Name]++
	var once sync.Once
	return placement{cluster: cl, release: func() {
		once.Do(func() {
			r.mu.Lock()
			r.reserved[cl.cfg.Name]--
			r.mu.Unlock()
		})
	}}, nil
}

// candidates are the clusters whose labels include every
// scheduling.host_labels pair and whose allowed roots admit every host
// path. None is invalid: no retry makes a cluster appear.
func (r *Runtime) candidates(inst berth.Instance) ([]*cluster, error) {
	want := inst.Spec.Scheduling.HostLabels
	var labelled []*cluster
	for _, cl := range r.clusters {
		if hasLabels(cl.cfg.Labels, want) {
			labelled = append(labelled, cl)
		}
	}
	if len(labelled) == 0 {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, "",
			"no kubernetes cluster has the labels %v", sortedPairs(want))
	}
	var out []*cluster
	var firstErr error
	for _, cl := range labelled {
		if err := hostPathsAllowed(inst.Spec.Volumes, cl.cfg.AllowedHostPathRoots); err != nil {
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

// load counts berth's active Pods (of this scope) in cl and finds inst's.
func (r *Runtime) load(ctx context.Context, cl *cluster, instanceID string) clusterLoad {
	pods, err := r.listPods(ctx, cl)
	if err != nil {
		return clusterLoad{err: err}
	}
	var l clusterLoad
	for i := range pods {
		p := &pods[i]
		if runtime.Owns(p.Labels, instanceID, r.scope) && p.DeletionTimestamp == nil {
			l.existing = p
		}
		if p.DeletionTimestamp == nil && !ended(p) {
			l.active++
		}
	}
	return l
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func clusterNames(cs []*cluster) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.cfg.Name
	}
	return strings.Join(names, ", ")
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
