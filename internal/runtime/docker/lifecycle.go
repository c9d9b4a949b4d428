package docker

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

// Start starts the container; a running one is left as it is (the engine
// answers 304, which the client takes as success), and a paused one resumed.
func (r *Runtime) Start(ctx context.Context, ref runtime.Ref) error {
	h, name, err := r.locate(ctx, "start", ref)
	if err != nil {
		return err
	}
	if _, err := h.cli.ContainerStart(ctx, name, client.ContainerStartOptions{}); err != nil {
		if cerrdefs.IsConflict(err) {
			if paused, perr := r.startPaused(ctx, h, name, ref); paused {
				return perr
			}
		}
		return classify(err, "start", ref.InstanceID, h.cfg.Name)
	}
	return nil
}

// Stop sends SIGTERM (or the image's stop signal) and SIGKILL after grace,
// rounded up to whole seconds as the Engine API counts them.
func (r *Runtime) Stop(ctx context.Context, ref runtime.Ref, grace time.Duration) error {
	h, name, err := r.locate(ctx, "stop", ref)
	if err != nil {
		return err
	}
	secs := max(0, int(math.Ceil(grace.Seconds())))
	if _, err := h.cli.ContainerStop(ctx, name, client.ContainerStopOptions{Timeout: &secs}); err != nil {
		return classify(err, "stop", ref.InstanceID, h.cfg.Name)
	}
	return nil
}

// Delete force-removes the container and its anonymous volumes
// (empty_dir), then the named volumes berth made for it unless their
// template asked them to persist, once no other container uses them
// (removeMadeVolumes).
func (r *Runtime) Delete(ctx context.Context, ref runtime.Ref) error {
	h, name, err := r.locate(ctx, "delete", ref)
	if runtime.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	vols := namedVolumes(ctx, h, name)
	_, err = h.cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		removeMadeVolumes(ctx, h, vols)
		return nil
	case cerrdefs.IsConflict(err):
		// "removal already in progress": another remove (a create's clean-up,
		// a second delivery) is on it. The delete is done once that removal
		// is; until then it is a transient state of the engine, retried
		// without spending an attempt, never a reason to fail the request.
		if waitRemoved(ctx, h, name, removalWait) {
			return nil
		}
		return runtime.NewError(runtime.ErrUnavailable, "delete", ref.InstanceID, h.cfg.Name, err)
	}
	return classify(err, "delete", ref.InstanceID, h.cfg.Name)
}

// removalWait bounds how long Delete waits for a removal already under way.
const removalWait = 10 * time.Second

// waitRemoved polls until the container is gone, for at most d.
func waitRemoved(ctx context.Context, h *host, name string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for poll := 50 * time.Millisecond; ; poll = min(2*poll, time.Second) {
		_, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return true
		}
		if time.Now().Add(poll).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(poll):
		}
	}
}

// locate returns the host and the name to address a Ref's container by. The
// name comes from the instance id, so a Ref whose runtime id was never
// recorded still works; a Ref without a node is looked up on every host
// (an instance whose node was not recorded before a crash).
func (r *Runtime) locate(ctx context.Context, op string, ref runtime.Ref) (*host, string, error) {
	name := ref.RuntimeID
	if ref.InstanceID != "" {
		name = runtime.ObjectName(ref.InstanceID)
	}
	if name == "" {
		return nil, "", runtime.Errorf(runtime.ErrInvalid, op, "", ref.Node, "a ref needs an instance id or a runtime id")
	}
	if ref.Node != "" {
		h, err := r.hostFor(op, ref)
		return h, name, err
	}
	found := make([]bool, len(r.hosts))
	errs := make([]error, len(r.hosts))
	var wg sync.WaitGroup
	for i, h := range r.hosts {
		wg.Go(func() {
			_, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
			switch {
			case err == nil:
				found[i] = true
			case !cerrdefs.IsNotFound(err):
				errs[i] = classify(err, op, ref.InstanceID, h.cfg.Name)
			}
		})
	}
	wg.Wait()
	for i, ok := range found {
		if ok {
			return r.hosts[i], name, nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Not found where we could look; it may be where we could not.
		return nil, "", runtime.NewError(runtime.ErrUnavailable, op, ref.InstanceID, "", err)
	}
	return nil, "", runtime.Errorf(runtime.ErrNotFound, op, ref.InstanceID, "", "no container %s on any host", name)
}
