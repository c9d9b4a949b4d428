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
		Load: r.load,
	}
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
