package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/hostpolicy"
)

// Place returns the host for inst (see runtime.Runtime.Place).
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
	return p.host.cfg.Name, nil
}

// pinned is the host an instance already has, checked to still take it.
func (r *Runtime) pinned(inst berth.Instance) (*host, error) {
	h := r.byName[inst.RuntimeNodeName]
	if h == nil {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, inst.RuntimeNodeName,
			"no docker host named %q is configured", inst.RuntimeNodeName)
	}
	if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, h.cfg.AllowedBindRoots); err != nil {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, h.cfg.Name, err)
	}
	return h, nil
}

// placement is place's answer: a host, and either the container an earlier
// attempt already made there or a reservation to release once created.
type placement struct {
	host     *host
	existing *container.Summary
	release  func()
}

// place chooses a host for an instance that has none (runtime.Choose).
func (r *Runtime) place(ctx context.Context, inst berth.Instance) (placement, error) {
	cands, err := r.candidates(inst)
	if err != nil {
		return placement{}, err
	}
	c, err := runtime.Choose(ctx, &r.reserved, inst.ID, "docker host", cands,
		func(ctx context.Context, h *host, count bool) runtime.Load[container.Summary] {
			return r.load(ctx, h, inst.ID, count)
		})
	return placement{host: c.Node, existing: c.Existing, release: c.Release}, err
}

// candidates are the hosts whose labels include every scheduling.host_labels
// pair and whose allowed roots admit every bind mount. None is invalid: no
// retry makes a host appear.
func (r *Runtime) candidates(inst berth.Instance) ([]*host, error) {
	want := inst.Spec.Scheduling.HostLabels
	var labelled []*host
	for _, h := range r.hosts {
		if runtime.HasLabels(h.cfg.Labels, want) {
			labelled = append(labelled, h)
		}
	}
	if len(labelled) == 0 {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, "",
			"no docker host has the labels %v", runtime.SortedPairs(want))
	}
	var out []*host
	var firstErr error
	for _, h := range labelled {
		if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, h.cfg.AllowedBindRoots); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("host %s: %w", h.cfg.Name, err)
			}
			continue
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, "", firstErr)
	}
	return out, nil
}

// load lists berth's containers (of this scope) on h; without count, only
// instanceID's (runtime.Choose).
func (r *Runtime) load(ctx context.Context, h *host, instanceID string, count bool) runtime.Load[container.Summary] {
	f := r.filters()
	if !count {
		f.Add("label", runtime.LabelInstanceID+"="+instanceID)
	}
	res, err := h.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return runtime.Load[container.Summary]{Err: classify(err, "list", "", h.cfg.Name)}
	}
	var l runtime.Load[container.Summary]
	for i := range res.Items {
		c := &res.Items[i]
		if runtime.Owns(c.Labels, instanceID, r.scope) {
			l.Existing = c
		}
		if phaseOf(string(c.State)).Active() {
			l.Active++
		}
	}
	return l
}

// filters select berth's containers of this runtime's scope.
func (r *Runtime) filters() client.Filters {
	f := make(client.Filters).Add("label", runtime.LabelManaged+"=true")
	if r.scope != "" {
		f.Add("label", runtime.LabelScope+"="+r.scope)
	}
	return f
}
