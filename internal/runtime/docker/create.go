package docker

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Create makes inst's container (see runtime.Runtime.Create): on its
// recorded host, else on the host placement picks; an existing container of
// the same instance is adopted. A named volume that exists but is not the
// one the spec means (another owner's, another persist) fails the create
// for good before anything is made (checkNamedVolumes).
func (r *Runtime) Create(ctx context.Context, inst berth.Instance) (runtime.Ref, error) {
	p, err := r.placer.ForCreate(ctx, inst)
	if err != nil {
		return runtime.Ref{}, err
	}
	defer p.Release()
	h := p.Node
	if p.Existing != nil {
		return runtime.Ref{InstanceID: inst.ID, Node: h.cfg.Name, RuntimeID: p.Existing.ID}, nil
	}
	node := h.cfg.Name

	opts, err := createOptions(inst, h.cfg, r.scope)
	if err != nil {
		return runtime.Ref{}, runtime.NewError(runtime.ErrInvalid, "create", inst.ID, node, err)
	}
	if err := checkNamedVolumes(ctx, h, inst); err != nil {
		return runtime.Ref{}, err
	}
	if err := r.ensureImage(ctx, h, opts.Config.Image, inst.Spec.PullPolicy); err != nil {
		return runtime.Ref{}, classify(err, "create", inst.ID, node)
	}
	res, err := h.cli.ContainerCreate(ctx, opts)
	if err == nil {
		return runtime.Ref{InstanceID: inst.ID, Node: node, RuntimeID: res.ID}, nil
	}
	if !cerrdefs.IsConflict(err) && !cerrdefs.IsAlreadyExists(err) {
		return runtime.Ref{}, classify(err, "create", inst.ID, node)
	}
	return r.adopt(ctx, h, inst, err)
}

// adopt answers a name conflict: the container is this instance's when its
// labels say so (an earlier attempt made it), else the name is taken.
func (r *Runtime) adopt(ctx context.Context, h *host, inst berth.Instance, conflict error) (runtime.Ref, error) {
	node := h.cfg.Name
	got, err := h.cli.ContainerInspect(ctx, runtime.ObjectName(inst.ID), client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			// Gone again between the two calls (a concurrent delete): the
			// engine answered, and a retry may pass.
			return runtime.Ref{}, runtime.NewError(runtime.ErrFailed, "create", inst.ID, node, err)
		}
		return runtime.Ref{}, classify(err, "create", inst.ID, node)
	}
	var labels map[string]string
	if got.Container.Config != nil {
		labels = got.Container.Config.Labels
	}
	if !runtime.Owns(labels, inst.ID, r.scope) {
		return runtime.Ref{}, runtime.NewError(runtime.ErrConflict, "create", inst.ID, node, conflict)
	}
	return runtime.Ref{InstanceID: inst.ID, Node: node, RuntimeID: got.Container.ID}, nil
}
