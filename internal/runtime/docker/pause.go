package docker

import (
	"context"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Pauser = (*Runtime)(nil)

// Pause freezes the container's processes with the engine's cgroup freezer:
// their memory stays where it is (runtime.Pauser). A paused container is
// left as it is.
func (r *Runtime) Pause(ctx context.Context, ref runtime.Ref) error {
	return r.freeze(ctx, "pause", ref, true)
}

// Resume thaws a paused container; a running one is left as it is.
func (r *Runtime) Resume(ctx context.Context, ref runtime.Ref) error {
	return r.freeze(ctx, "resume", ref, false)
}

// freeze pauses (pause true) or resumes the container. The engine answers
// a repeat ("already paused" a conflict, "is not paused" a server error) and
// a container that is not running alike, so a failure is judged by the
// container's state: already as asked is success, not running ErrConflict,
// and anything else the engine's error as classified.
func (r *Runtime) freeze(ctx context.Context, op string, ref runtime.Ref, pause bool) error {
	h, name, err := r.locate(ctx, op, ref)
	if err != nil {
		return err
	}
	if pause {
		_, err = h.cli.ContainerPause(ctx, name, client.ContainerPauseOptions{})
	} else {
		_, err = h.cli.ContainerUnpause(ctx, name, client.ContainerUnpauseOptions{})
	}
	if err == nil {
		return nil
	}
	in, ierr := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if ierr != nil {
		return classify(ierr, op, ref.InstanceID, h.cfg.Name)
	}
	switch st := in.Container.State; {
	case st == nil:
	case st.Running && st.Paused == pause:
		return nil
	case !st.Running:
		return runtime.NewError(runtime.ErrConflict, op, ref.InstanceID, h.cfg.Name, err)
	}
	return classify(err, op, ref.InstanceID, h.cfg.Name)
}

// startPaused is Start's answer to the engine's refusal to start a paused
// container: a paused container is a running one (runtime.Runtime's Start
// leaves a running container as it is), so it is resumed. It reports
// whether the container was paused; any other conflict is Start's own.
func (r *Runtime) startPaused(ctx context.Context, h *host, name string, ref runtime.Ref) (bool, error) {
	in, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	paused := err == nil && in.Container.State != nil && in.Container.State.Paused
	if !paused {
		// Not paused, or not known to be: the start's own error stands.
		return false, nil
	}
	return true, r.freeze(ctx, "start", ref, false)
}

// stillFrozenAsSaid reports whether a pause or resume event still tells the
// container's state (any other event is let through): the engine replays
// its event log after a reconnect and at a watcher's start, and a pause
// replayed after the resume that followed it must not take a running
// instance back to paused. A container that cannot be inspected (removed
// since) has nothing left to report.
func stillFrozenAsSaid(ctx context.Context, h *host, ev runtime.Event) bool {
	if ev.Kind != runtime.EventPaused && ev.Kind != runtime.EventResumed {
		return true
	}
	res, err := h.cli.ContainerInspect(ctx, ev.RuntimeID, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		return false
	}
	st := res.Container.State
	return st.Running && st.Paused == (ev.Kind == runtime.EventPaused)
}
