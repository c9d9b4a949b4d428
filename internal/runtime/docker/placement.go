package docker

import (
	"context"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Place returns the host for inst (see runtime.Runtime.Place; the rules are
// runtime.Placer's).
func (r *Runtime) Place(ctx context.Context, inst berth.Instance) (string, error) {
	return r.placer.Place(ctx, inst)
}

// hostPlacer places instances on hosts, adopting containers.
type hostPlacer = runtime.Placer[*host, container.Summary]

// newPlacer is the runtime's placement: runtime.Placer over its hosts.
func (r *Runtime) newPlacer() *hostPlacer {
	return &hostPlacer{
		Kind:  "docker host",
		Nodes: r.hosts,
		Named: func(op, instanceID, recorded string) (*host, error) {
			return r.hostFor(op, runtime.Ref{InstanceID: instanceID, Node: recorded})
		},
		Count: r.count,
		Find:  r.find,
	}
}

// count is how many of berth's containers (of this scope) are active on h:
// one listing of them.
func (r *Runtime) count(ctx context.Context, h *host) (int, error) {
	res, err := h.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: r.filters()})
	if err != nil {
		return 0, classify(err, "list", "", h.cfg.Name)
	}
	n := 0
	for _, c := range res.Items {
		if phaseOf(string(c.State)).Active() {
			n++
		}
	}
	return n, nil
}

// find is instanceID's container on h, nil when it has none: a listing
// filtered to the instance's label.
func (r *Runtime) find(ctx context.Context, h *host, instanceID string) (*container.Summary, error) {
	f := r.filters().Add("label", runtime.LabelInstanceID+"="+instanceID)
	res, err := h.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, classify(err, "list", instanceID, h.cfg.Name)
	}
	for i := range res.Items {
		if runtime.Owns(res.Items[i].Labels, instanceID, r.scope) {
			return &res.Items[i], nil
		}
	}
	return nil, nil
}

// filters select berth's containers of this runtime's scope.
func (r *Runtime) filters() client.Filters {
	f := make(client.Filters).Add("label", runtime.LabelManaged+"=true")
	if r.scope != "" {
		f.Add("label", runtime.LabelScope+"="+r.scope)
	}
	return f
}
