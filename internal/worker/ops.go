package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// claim takes up op for the instance (manager.Claim: pending → creating,
// say, or already in progress after a crash), recording node when set. An
// instance gone or in any other status means the operation no longer
// applies. mark, when set, is the message's outbox item, read still
// pending: the claim marks it dispatched in the same write
// (manager.ClaimItem), since the local server's dispatcher does not.
func (w *Worker) claim(ctx context.Context, id string, op container.Op, node, mark string) (container.Instance, error) {
	inst, err := w.m.ClaimItem(ctx, id, op, node, mark, w.now().UTC())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return inst, stale("instance %s no longer exists", id)
	case errors.Is(err, manager.ErrMoved):
		return inst, stale("%v", err)
	}
	return inst, err
}

func (w *Worker) create(ctx context.Context, log *slog.Logger, msg outbox.Message, mark string) error {
	inst, err := w.store.GetInstance(ctx, msg.InstanceID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted before its create ran: make sure no attempt left a container.
		return w.removeOrphan(ctx, log, msg.InstanceID, stale("instance deleted before its create ran"))
	}
	if err != nil {
		return fmt.Errorf("reading instance: %w", err)
	}
	if inst.Status != fsm.Pending && inst.Status != fsm.Creating {
		return stale("instance is %s", inst.Status)
	}
	// Taken up again: an earlier attempt may have started the container.
	resuming := inst.Status == fsm.Creating
	if err := w.clearStale(ctx, log, inst, msg); err != nil {
		return err
	}
	// The slot is held from pending → creating until the container is
	// stable or the start timeout passes, so that at most CreateSlots
	// containers start at once on this worker.
	if err := w.slots.Acquire(ctx); err != nil {
		return err
	}
	defer w.slots.Release()
	rt, node, err := w.rt.Place(ctx, inst)
	if err != nil {
		return err
	}
	inst, err = w.claim(ctx, inst.ID, container.OpCreate, node, mark)
	if err != nil {
		return err
	}
	withSecrets, err := w.withSecrets(ctx, log, inst)
	if err != nil {
		return err
	}
	createStart := w.now()
	ref, err := rt.Create(ctx, withSecrets)
	if err != nil {
		return w.afterRuntimeError(ctx, log, rt, inst.ID, err)
	}
	if ref.Node != inst.RuntimeNodeName {
		// Create adopted an object on a node more precise than the one
		// claimed (a scheduled Pod's cluster/node). A new runtime id
		// alone is not written here: calls address the object by name,
		// and the report of its start or exit records it in the write
		// that must happen anyway (one durable write less per create).
		// An instance that left creating only matters if it is going
		// away.
		err := w.m.Placed(ctx, inst.ID, ref.RuntimeID, ref.Node)
		if err != nil {
			if gone := w.checkStillWanted(ctx, log, rt, inst.ID); gone != nil {
				return gone
			}
		}
	}
	if !resuming || !w.startedBefore(ctx, log, rt, ref) {
		if err := rt.Start(ctx, ref); err != nil {
			return w.afterRuntimeError(ctx, log, rt, inst.ID, err)
		}
	}
	st, err := w.waitStable(ctx, rt, ref, createStart.Add(w.timeout))
	if err != nil {
		return w.afterRuntimeError(ctx, log, rt, inst.ID, unstable(rt, ref, err))
	}
	if err := w.report(ctx, container.OpCreate, st); err != nil {
		return err
	}
	return w.checkStillWanted(ctx, log, rt, inst.ID)
}

// startedBefore reports whether the container a resumed create adopted
// was already started by an earlier attempt (one whose start reached the
// runtime but whose answer was lost). Its run is then the create's run: it
// may have ended and been recorded since, and a second start would run it
// again behind an instance that is already stopped or failed. The state
// of that run is reported as a first attempt's would be. When the runtime
// cannot say, the start goes ahead as before (it fails the same way).
func (w *Worker) startedBefore(ctx context.Context, log *slog.Logger, rt runtime.Runtime, ref runtime.Ref) bool {
	st, err := rt.Inspect(ctx, ref)
	if err != nil || st.StartedAt == nil {
		return false
	}
	log.InfoContext(ctx, "container already started by an earlier attempt; not starting it again",
		"started_at", st.StartedAt, "phase", st.Phase)
	return true
}

// claimOn claims the operation (claim) and finds the instance's runtime:
// the first step of a start and of a stop.
func (w *Worker) claimOn(ctx context.Context, msg outbox.Message, op container.Op, mark string) (container.Instance, runtime.Runtime, error) {
	inst, err := w.claim(ctx, msg.InstanceID, op, "", mark)
	if err != nil {
		return inst, nil, err
	}
	rt, err := w.rt.ForInstance(inst)
	return inst, rt, err
}

func (w *Worker) start(ctx context.Context, log *slog.Logger, msg outbox.Message, mark string) error {
	inst, rt, err := w.claimOn(ctx, msg, container.OpStart, mark)
	if err != nil {
		return err
	}
	ref := runtime.RefOf(inst)
	err = rt.Start(ctx, ref)
	if runtime.IsNotFound(err) {
		// Removed behind berth's back: make it again from the frozen spec.
		log.WarnContext(ctx, "container missing on start; recreating from the stored spec")
		var withSecrets container.Instance
		if withSecrets, err = w.withSecrets(ctx, log, inst); err != nil {
			return err
		}
		if ref, err = rt.Create(ctx, withSecrets); err == nil {
			err = rt.Start(ctx, ref)
		}
	}
	if err != nil {
		return err
	}
	st, err := w.waitStable(ctx, rt, ref, w.now().Add(w.timeout))
	if err != nil {
		return unstable(rt, ref, err)
	}
	return w.report(ctx, container.OpStart, st)
}

func (w *Worker) stop(ctx context.Context, log *slog.Logger, msg outbox.Message, mark string) error {
	inst, rt, err := w.claimOn(ctx, msg, container.OpStop, mark)
	if err != nil {
		return err
	}
	ref := runtime.RefOf(inst)
	if err := rt.Stop(ctx, ref, w.grace); err != nil && !runtime.IsNotFound(err) {
		return err
	}
	var lastWords *container.LastWords
	if manager.RequestedByPolicy(inst) {
		lastWords = w.lastWords(ctx, log, inst)
	}
	var exit *int
	// The runtime's own end time where it has one: a later start is
	// reported in the runtime's clock and compared with it (a report from
	// before it is a late one of this run).
	finished := w.now().UTC()
	if st, err := rt.Inspect(ctx, ref); err == nil {
		exit = st.ExitCode
		if st.FinishedAt != nil {
			finished = st.FinishedAt.UTC()
		}
	}
	// An instance no longer stopping had its exit recorded by the state
	// loop first.
	err = w.m.Stopped(ctx, inst.ID, msg.OutboxID, finished, exit, lastWords, w.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return stale("instance deleted while stopping")
	}
	return err
}

func (w *Worker) delete(ctx context.Context, log *slog.Logger, msg outbox.Message, mark string) error {
	inst, err := w.claim(ctx, msg.InstanceID, container.OpDelete, "", mark)
	var st errStale
	if errors.As(err, &st) && errors.Is(w.instanceGone(ctx, msg.InstanceID), store.ErrNotFound) {
		return w.removeOrphan(ctx, log, msg.InstanceID, err)
	}
	if err != nil {
		return err
	}
	rt, err := w.rt.ForInstance(inst)
	if err != nil {
		return err
	}
	var lastWords *container.LastWords
	if manager.RequestedByPolicy(inst) {
		// Read before the container and its logs are gone.
		lastWords = w.lastWords(ctx, log, inst)
	}
	// A ref without a node is looked up on every node: a create may have
	// made the container before its node was recorded.
	if err := rt.Delete(ctx, runtime.RefOf(inst)); err != nil {
		return err
	}
	err = w.m.Deleted(ctx, inst.ID, msg.OutboxID, lastWords, w.now().UTC())
	if errors.Is(err, manager.ErrMoved) {
		return stale("%v", err)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func (w *Worker) instanceGone(ctx context.Context, id string) error {
	_, err := w.store.GetInstance(ctx, id)
	return err
}

// waitStable polls the container until it runs or has ended, or until the
// deadline: then it is a permanent failure (the slot is released). When
// ctx's own deadline (a Lambda invocation's) comes first, it stops
// InvocationMargin before it with errHandedBack, a retryable error.
func (w *Worker) waitStable(ctx context.Context, rt runtime.Runtime, ref runtime.Ref, deadline time.Time) (runtime.State, error) {
	poll := w.poll
	cutoff, hasCutoff := waitCutoff(ctx)
	for {
		st, err := rt.Inspect(ctx, ref)
		if err != nil {
			return st, err
		}
		switch st.Phase {
		case runtime.PhaseRunning, runtime.PhaseExited, runtime.PhaseDead:
			return st, nil
		}
		if !w.now().Before(deadline) {
			if st.Error != "" {
				// The runtime's word for why (Unschedulable, ImagePullBackOff, …).
				return st, fmt.Errorf("container still %s after the %s start timeout (%s): %w", st.Phase, w.timeout, st.Error, errPermanent)
			}
			return st, fmt.Errorf("container still %s after the %s start timeout: %w", st.Phase, w.timeout, errPermanent)
		}
		wait := poll
		if hasCutoff {
			left := time.Until(cutoff)
			if left <= 0 {
				return st, fmt.Errorf("container still %s: %w", st.Phase, errHandedBack)
			}
			wait = min(wait, left)
		}
		if err := w.waitChange(ctx, rt, ref, st, wait, deadline); err != nil {
			return st, err
		}
		poll = min(poll*2, maxStablePoll)
	}
}

// ChangeWaiter is a runtime that can block until a container's state
// changes (Kubernetes: a watch on the one Pod), so that a create's
// stabilisation wait reacts when the container starts rather than at its
// next poll. WaitChange returns nil when ref's state may differ from last
// (spurious returns are allowed: the caller inspects again) and ctx's error
// when ctx ends first; any other error means it could not wait, and the
// worker polls instead. Runtimes without it (Docker) are polled.
type ChangeWaiter interface {
	WaitChange(ctx context.Context, ref runtime.Ref, last runtime.State) error
}

// waitChange waits before waitStable's next Inspect: poll when rt cannot
// say when the container changes; otherwise until it does, for at most
// maxStablePoll (a missed change costs one poll, never the start timeout)
// and never past the deadline, so the timeout is still noticed on time. It
// returns an error only when ctx ends.
func (w *Worker) waitChange(ctx context.Context, rt runtime.Runtime, ref runtime.Ref, last runtime.State, poll time.Duration, deadline time.Time) error {
	cw, ok := rt.(ChangeWaiter)
	if ok {
		bound := min(maxStablePoll, max(time.Until(deadline), 0))
		if cutoff, has := waitCutoff(ctx); has {
			bound = min(bound, max(time.Until(cutoff), 0))
		}
		wctx, cancel := context.WithTimeout(ctx, bound)
		// A change, or the bound passed: inspect again. wctx is read before
		// cancel, which would end it either way.
		waited := cw.WaitChange(wctx, ref, last) == nil || wctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if waited {
			return nil
		}
		// The watch could not be made: fall back to the poll.
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(poll):
		return nil
	}
}

// errUnstable is a container that did not become stable within the start
// timeout. Once the instance has failed (not before: the state loop would
// record the stop's exit instead of the timeout), the container is
// stopped, since one that came up late would run with nobody expecting
// it. It is stopped, not removed, so its logs stay readable and a start or
// a delete finds it.
type errUnstable struct {
	rt  runtime.Runtime
	ref runtime.Ref
	err error
}

func (e *errUnstable) Error() string { return e.err.Error() }
func (e *errUnstable) Unwrap() error { return e.err }

// unstable marks a start-timeout error from waitStable; others pass as
// they are.
func unstable(rt runtime.Runtime, ref runtime.Ref, err error) error {
	if !errors.Is(err, errPermanent) {
		return err
	}
	return &errUnstable{rt: rt, ref: ref, err: err}
}

// stopUnstable stops the container of an errUnstable, after the failure.
func (w *Worker) stopUnstable(ctx context.Context, log *slog.Logger, cause error) {
	var u *errUnstable
	if !errors.As(cause, &u) {
		return
	}
	if err := u.rt.Stop(ctx, u.ref, w.grace); err != nil {
		log.WarnContext(ctx, "stopping a container that missed the start timeout", "error", err)
	}
}

// report feeds what the runtime shows into the state loop: started, and
// then exited if it already ended, so a short-lived container goes
// creating → running → stopped/failed like a long-lived one does. op is the
// operation this worker carried out (manager.Observation.ReportOf): only a
// start's own report may complete that start with the run already recorded.
func (w *Worker) report(ctx context.Context, op container.Op, st runtime.State) error {
	id := st.InstanceID
	if st.Phase == runtime.PhaseRunning || st.StartedAt != nil {
		at := w.now()
		if st.StartedAt != nil {
			at = *st.StartedAt
		}
		if _, err := w.m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedStarted, At: at,
			NodeName: st.Node, RuntimeID: st.RuntimeID, Endpoints: st.Endpoints, ReportOf: op}); err != nil {
			return err
		}
	}
	if st.Phase == runtime.PhaseExited || st.Phase == runtime.PhaseDead {
		at := w.now()
		if st.FinishedAt != nil {
			at = *st.FinishedAt
		}
		_, err := w.m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedExited, At: at, RunStartedAt: st.StartedAt,
			ExitCode: st.ExitCode, OOMKilled: st.OOMKilled, NodeName: st.Node, RuntimeID: st.RuntimeID, Message: st.Error,
			ReportOf: op, LastWords: w.lastWordsReader()})
		return err
	}
	return nil
}

// afterRuntimeError handles a failed runtime call of a create: if the
// instance was deleted meanwhile, the container is removed (no orphan) and
// the message is stale; otherwise the error decides retry or failure.
func (w *Worker) afterRuntimeError(ctx context.Context, log *slog.Logger, rt runtime.Runtime, id string, cause error) error {
	if gone := w.checkStillWanted(ctx, log, rt, id); gone != nil {
		return gone
	}
	return cause
}

// checkStillWanted removes the container when its instance is gone or
// being deleted: a delete that ran while this create was between calls
// may have removed nothing, and the delete worker never looks again.
// It returns nil while the instance is still wanted.
func (w *Worker) checkStillWanted(ctx context.Context, log *slog.Logger, rt runtime.Runtime, id string) error {
	inst, err := w.store.GetInstance(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return w.removeWith(ctx, log, rt, id, stale("instance deleted during its create"))
	case err != nil:
		return fmt.Errorf("reading instance: %w", err)
	case inst.Status == fsm.DeletePending || inst.Status == fsm.Deleting:
		if err := rt.Delete(ctx, runtime.RefOf(inst)); err != nil {
			return err
		}
		return stale("instance is being deleted; removed the container its create made")
	}
	return nil
}

// removeOrphan removes whatever container an instance id may have on any
// runtime, then returns result.
func (w *Worker) removeOrphan(ctx context.Context, log *slog.Logger, id string, result error) error {
	for _, kind := range []string{container.RuntimeDocker, container.RuntimeKubernetes} {
		rt, err := w.rt.Kind(kind)
		if err != nil {
			continue
		}
		if err := w.removeWith(ctx, log, rt, id, nil); err != nil {
			return err
		}
	}
	return result
}

func (w *Worker) removeWith(ctx context.Context, log *slog.Logger, rt runtime.Runtime, id string, result error) error {
	if err := rt.Delete(ctx, runtime.Ref{InstanceID: id}); err != nil {
		return fmt.Errorf("removing orphaned container of %s: %w", id, err)
	}
	log.InfoContext(ctx, "removed container of a deleted instance", "instance_id", id)
	return result
}
