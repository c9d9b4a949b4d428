package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// terminal converges a stopped or failed instance with its container when
// the container runs (started behind berth's back, or while berth was
// down and its watch missed it):
//
//   - stopped: stopped → running is a transition the FSM allows, so what
//     happened is recorded (manager.OnEvent, as the watch would have);
//   - failed: failed → running is not, and a failed instance must not run,
//     so the container is stopped and a ContainerReconciled event says so.
func (r *Reconciler) terminal(ctx context.Context, log *slog.Logger, l *listing, inst container.Instance, now time.Time, rep *Report) {
	st := containerOf(inst, l)
	if st == nil || st.Phase != runtime.PhaseRunning {
		return
	}
	// The listing may be older than the instance's status, and Docker's
	// lags behind its own events (a container that exited, and failed its
	// instance, can still be listed running): ask the container itself
	// before stopping it or recording it as running.
	live, err := l.rt.Inspect(ctx, runtime.Ref{InstanceID: inst.ID, Node: st.Node, RuntimeID: st.RuntimeID})
	switch {
	case runtime.IsNotFound(err):
		return
	case err != nil:
		rep.fail(fmt.Errorf("inspecting the container of %s instance %s: %w", inst.Status, inst.ID, err))
		log.WarnContext(ctx, "inspecting a terminal instance's container", "error", err)
		return
	case live.Phase != runtime.PhaseRunning:
		log.InfoContext(ctx, "container listed running has ended; nothing to reconcile", "phase", string(live.Phase))
		return
	}
	st = &live
	switch inst.Status {
	case fsm.Stopped:
		r.observe(ctx, log, inst, l.rt, st, observeStarted, now, rep)
	case fsm.Failed:
		r.stopFailed(ctx, log.With("op", "stop_failed"), l.rt, inst, *st, now, rep)
	}
}

// stopFailed stops the running container of a failed instance, if the
// instance is still as listed.
func (r *Reconciler) stopFailed(ctx context.Context, log *slog.Logger, rt runtime.Runtime, inst container.Instance,
	st runtime.State, now time.Time, rep *Report) {
	ref := runtime.Ref{InstanceID: inst.ID, Node: st.Node, RuntimeID: st.RuntimeID}
	if err := rt.Stop(ctx, ref, r.stopGrace); err != nil && !runtime.IsNotFound(err) {
		rep.fail(fmt.Errorf("stopping the container of failed instance %s: %w", inst.ID, err))
		log.ErrorContext(ctx, "stopping a failed instance's container", "error", err)
		return
	}
	msg := fmt.Sprintf("reconciler stopped the container on %s: it was running while the instance is failed", st.Node)
	// Recorded only if the instance is still failed as listed: a delete
	// requested meanwhile has its own events (and removes the container),
	// which a "failed" event after them would contradict.
	err := r.m.Record(ctx, inst, container.Event{InstanceID: inst.ID, Type: container.EventReconciled,
		From: inst.Status, To: inst.Status, At: now.UTC(), Message: msg, Actor: container.ActorSystem})
	switch {
	case errors.Is(err, manager.ErrMoved):
		rep.Conflicts++
		log.InfoContext(ctx, "instance moved since it was listed; its container's stop is not recorded", "listed_version", inst.Version)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		rep.fail(fmt.Errorf("recording the stop of %s: %w", inst.ID, err))
		log.ErrorContext(ctx, "recording a failed instance's container stop", "error", err)
	}
	rep.TerminalStopped++
	log.WarnContext(ctx, "stopped the running container of a failed instance", "node", st.Node)
}
