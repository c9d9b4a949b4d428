package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// ObservationKind is what a runtime saw happen to a container.
type ObservationKind string

// The observations the state loop understands.
const (
	ObservedStarted   ObservationKind = "started"   // the container is running
	ObservedExited    ObservationKind = "exited"    // it ended (ExitCode, OOMKilled)
	ObservedDestroyed ObservationKind = "destroyed" // it is gone from the runtime
	ObservedPaused    ObservationKind = "paused"    // its processes are frozen (runtime.PhasePaused)
	ObservedResumed   ObservationKind = "resumed"   // it runs again after a pause
)

// Observation is a runtime lifecycle event for one instance, from a runtime
// watch, a worker or the reconciler.
type Observation struct {
	InstanceID string
	Kind       ObservationKind
	ExitCode   *int
	OOMKilled  bool
	At         time.Time
	// RunStartedAt is, on an exit, when the run that ended had started
	// (runtime.Event.RunStartedAt, runtime.State.StartedAt), nil when the
	// observer does not know.
	RunStartedAt *time.Time
	NodeName     string
	RuntimeID    string
	Message      string
	// Endpoints are where a started container's published ports answer
	// (runtime.State.Endpoints); nil when the observer does not know them
	// (a runtime event), which leaves those recorded as they are.
	Endpoints []container.Endpoint
	// LastWords, from an observer that holds the container's runtime,
	// reads the last words an exit keeps (keepsLastWords: a failure of its
	// own, or the end of a stop a group policy requested); nil records the
	// end without them.
	LastWords LastWordsReader
	// ReportOf is the operation whose worker reports what it saw after its
	// own create or start call returned (empty: any other observer: an event
	// stream, a listing, the reconciler). While an instance is starting, only
	// the start's own worker may say that the run already recorded is still
	// the present one (a start of a running container changes nothing); the
	// create's worker, late, speaks of the run before the start was asked.
	ReportOf container.Op
}

// Applied says what OnEvent did with an observation.
type Applied string

// Outcomes of OnEvent.
const (
	AppliedTransition Applied = "transition" // the instance moved
	AppliedNoop       Applied = "noop"       // it already reflected the observation
	AppliedExpected   Applied = "expected"   // the effect of berth's own stop or delete in progress
	AppliedRejected   Applied = "rejected"   // the FSM forbids it: TransitionRejected recorded
	AppliedStale      Applied = "stale"      // the FSM forbids it, but it predates the current status
	AppliedGone       Applied = "gone"       // the instance no longer exists
)

// OnEvent is the state loop: it applies a runtime observation to its
// instance through the FSM and records it. A container that exits by
// itself becomes stopped (exit 0) or failed (non-zero, or OOM-killed); one
// that was asked to stop becomes stopped whatever its exit code. An
// observation the FSM does not allow is recorded as TransitionRejected and
// logged, never dropped.
func (m *Manager) OnEvent(ctx context.Context, ob Observation) (Applied, error) {
	if ob.At.IsZero() {
		ob.At = m.now()
	}
	ob.At = ob.At.UTC()
	var applied Applied
	err := retryOnConflict(func() error {
		inst, err := m.store.GetInstance(ctx, ob.InstanceID)
		if err != nil {
			return err
		}
		applied, err = m.applyObservation(ctx, inst, ob)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		m.log.InfoContext(ctx, "observation for a deleted instance", "instance_id", ob.InstanceID, "kind", ob.Kind)
		return AppliedGone, nil
	}
	if err != nil {
		return "", fmt.Errorf("on event %s of %s: %w", ob.Kind, ob.InstanceID, err)
	}
	return applied, nil
}

func (m *Manager) applyObservation(ctx context.Context, inst container.Instance, ob Observation) (Applied, error) {
	if ob.Kind == ObservedExited && inst.Status == fsm.Running && inst.RestartAt != nil {
		// The exit a scheduled restart answers, reported again (a replay,
		// the reconciler's listing): recorded already.
		return AppliedNoop, nil
	}
	if (ob.Kind == ObservedPaused || ob.Kind == ObservedResumed) && inst.RestartAt != nil {
		// Its container ended and awaits its restart: a pause or resume
		// reported now is of the run before (replayed), not news.
		return AppliedStale, nil
	}
	to, evType, ok := target(inst.Status, ob)
	switch {
	case !ok:
		// Expected while berth itself stops or deletes the container:
		// the worker records the outcome; a second entry would only blur it.
		m.log.DebugContext(ctx, "observation expected during "+string(inst.Status), "instance_id", inst.ID, "kind", ob.Kind)
		return AppliedExpected, nil
	case to == inst.Status:
		node := ob.Kind == ObservedStarted && inst.RuntimeNodeName == "" && ob.NodeName != ""
		if node || endpointsBackfill(inst, ob) {
			// Backfill what a restart or a lost write left empty, and the
			// endpoints a start event could not carry.
			_, err := m.store.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
				From: inst.Status, To: inst.Status, Update: func(i *container.Instance) {
					if node {
						i.RuntimeNodeName = ob.NodeName
					}
					if endpointsBackfill(inst, ob) {
						i.Endpoints = ob.Endpoints
					}
				}})
			return AppliedNoop, err
		}
		return AppliedNoop, nil
	case superseded(inst, ob):
		// A start reported from before the container last ended, or an
		// exit from before it last started: the event stream delivered it
		// late, and applying it (the FSM allows stopped → running) would
		// undo a newer state.
		m.log.InfoContext(ctx, "superseded observation ignored", "instance_id", inst.ID, "kind", ob.Kind,
			"status", inst.Status, "observed_at", ob.At)
		return AppliedStale, nil
	case !fsm.Can(inst.Status, to) && ob.At.Before(inst.UpdatedAt):
		// Seen before the instance reached its status (an event stream
		// delivers late, most of all after a reconnect): what it says was
		// already superseded, and it is no conflict with the runtime. An
		// engine clock behind berth's makes a late report look older
		// still; the reconciler compares the present state either way.
		m.log.InfoContext(ctx, "stale observation ignored", "instance_id", inst.ID, "kind", ob.Kind,
			"status", inst.Status, "observed_at", ob.At, "status_since", inst.UpdatedAt)
		return AppliedStale, nil
	case !fsm.Can(inst.Status, to):
		msg := fmt.Sprintf("runtime reported %s while %s; %s → %s is not allowed", ob.Kind, inst.Status, inst.Status, to)
		m.log.WarnContext(ctx, "transition rejected", "instance_id", inst.ID, "kind", ob.Kind, "from", inst.Status, "to", to)
		m.metrics.Count("RejectedTransitions", 1, "Kind", string(ob.Kind))
		return AppliedRejected, m.record(ctx, inst, ob, container.EventTransitionReject, msg)
	}
	if at, n, ok := restartFor(inst, ob); ok {
		return m.scheduleRestart(ctx, inst, ob, at, n)
	}
	reason := statusReason(inst.Status, to, ob)
	if inst.Restarts > 0 && inst.Status == fsm.Running && ob.Kind == ObservedExited {
		reason = fmt.Sprintf("%s after %d restarts", reason, inst.Restarts)
	}
	// A member's group policy is requested in the same write as its exit,
	// so a crash cannot separate them.
	cleanup, note := m.memberCleanup(ctx, inst, to, evType == container.EventExited, ob.ExitCode)
	reason = policyNote(reason, note)
	var lastWords *container.LastWords
	if keepsLastWords(inst, to, ob) {
		// Why it failed, in its own words, while the container is still
		// there to ask (a policy may delete it next).
		lastWords = m.lastWords(ctx, inst, ob.LastWords)
	}
	_, err := m.store.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
		Update: func(i *container.Instance) {
			i.StatusReason = reason
			if ob.NodeName != "" {
				i.RuntimeNodeName = ob.NodeName
			}
			if ob.RuntimeID != "" {
				i.RuntimeID = ob.RuntimeID
			}
			switch ob.Kind {
			case ObservedStarted:
				at := ob.At
				i.StartedAt, i.FinishedAt, i.ExitCode = &at, nil, nil
				i.Endpoints = ob.Endpoints
			case ObservedExited, ObservedDestroyed:
				at := ob.At
				i.FinishedAt = &at
				if ob.ExitCode != nil {
					code := *ob.ExitCode
					i.ExitCode = &code
				}
			}
		},
		Event: &container.Event{Type: evType, From: inst.Status, To: to, At: ob.At, Message: joinMsg(reason, ob.Message),
			ExitCode: ob.ExitCode, Actor: container.ActorSystem, LastWords: lastWords},
		Outbox: cleanup,
	})
	if err != nil {
		return "", err
	}
	m.log.InfoContext(ctx, "state changed", "instance_id", inst.ID, "from", inst.Status, "to", to, "kind", ob.Kind)
	return AppliedTransition, nil
}

// superseded reports whether ob predates the run it would change: a start
// seen before the instance's container last finished (or of the run that
// finish ended), or an exit of a run that began before the recorded one.
func superseded(inst container.Instance, ob Observation) bool {
	switch {
	case ob.Kind == ObservedStarted && (inst.Status == fsm.Stopped || inst.Status == fsm.Failed):
		// Before the recorded exit, or the very run that exit ended (a
		// late report of it): Docker stamps a quick exit before the same
		// run's start, so the start's time alone can read after the exit.
		return inst.FinishedAt != nil && ob.At.Before(*inst.FinishedAt) ||
			inst.StartedAt != nil && !ob.At.After(*inst.StartedAt)
	case ob.Kind == ObservedStarted && (inst.Status == fsm.StartPending || inst.Status == fsm.Starting):
		// While berth starts a container, a late report of the run before
		// (a listing or an event stream replayed after a reconnect) would
		// otherwise be taken for the new start. The new start is reported
		// in the runtime's clock, which may be coarse: Kubernetes gives
		// whole seconds, so a start just after the last exit can read up
		// to a second before it.
		if inst.FinishedAt != nil && ob.At.Add(clockGrain(ob.At)).Before(*inst.FinishedAt) {
			return true
		}
		// Nor is a report of the run already recorded when the start was
		// asked, whose exit berth has not seen yet: taken for the new start,
		// it would make the instance running (and stoppable) before the
		// start it waits for has happened, and that start would then run
		// the container under the user's stop. Only the worker carrying out
		// this start, once it has claimed it, can say that run is still the
		// one running; any other observer (the create's worker reporting
		// late among them) must show a run that began after it.
		ownStart := ob.ReportOf == container.OpStart && inst.Status == fsm.Starting
		return !ownStart && inst.StartedAt != nil && !ob.At.After(*inst.StartedAt)
	case ob.Kind == ObservedExited && inst.Status == fsm.StartPending:
		// The exit already recorded before the start was asked, delivered
		// late (an event stream inspects before it reports): the run it
		// ended is the recorded one, whose end is known.
		run := ob.RunStartedAt
		return inst.FinishedAt != nil && run != nil && inst.StartedAt != nil && !run.After(*inst.StartedAt)
	case ob.Kind == ObservedStarted && inst.Status == fsm.Paused:
		// The start of the paused run, reported again (a replay, a late
		// listing): only a run that began after it (the container was
		// restarted behind berth's back, which thaws it) is news.
		return inst.StartedAt != nil && !ob.At.After(*inst.StartedAt)
	case ob.Kind == ObservedExited && (inst.Status == fsm.Running || inst.Status == fsm.Paused):
		if inst.StartedAt == nil {
			return false
		}
		if run := ob.RunStartedAt; run != nil {
			// The run it ended began before the recorded one. Its own end
			// time cannot say: an engine may stamp a quick exit before the
			// start of the same run (Docker's FinishedAt is the process's
			// end, its StartedAt the end of its start bookkeeping).
			return run.Add(clockGrain(*run)).Before(*inst.StartedAt)
		}
		return ob.At.Before(*inst.StartedAt)
	}
	return false
}

// clockGrain is how much earlier than the moment it stands for a runtime's
// timestamp may read: a second for one without a fraction (Kubernetes
// truncates to seconds), nothing for a precise one (Docker: nanoseconds).
func clockGrain(t time.Time) time.Duration {
	if t.Nanosecond() == 0 {
		return time.Second
	}
	return 0
}

// target decides where an observation takes an instance in status s.
// ok=false means the observation is expected and changes nothing (a
// container dying or vanishing while berth deletes it).
func target(s fsm.Status, ob Observation) (to fsm.Status, eventType string, ok bool) {
	switch ob.Kind {
	case ObservedStarted:
		if s == fsm.DeletePending || s == fsm.Deleting {
			// A create or start already under way when the delete was
			// asked: the delete removes what it started.
			return s, "", false
		}
		return fsm.Running, container.EventStarted, true
	case ObservedPaused, ObservedResumed:
		return frozenTarget(s, ob.Kind)
	case ObservedExited, ObservedDestroyed:
		switch s {
		case fsm.DeletePending, fsm.Deleting:
			return s, "", false
		case fsm.StopPending:
			// stop_pending → stopped is not in the table: the stop worker
			// finds the container ended and finishes the request.
			return s, "", false
		case fsm.Starting:
			// starting → stopped is not in the table either: the start
			// worker reports what it finds (started, then exited), and an
			// exit it misses is the reconciler's (running with an ended
			// container). A restart of a container that ends by itself
			// meets this every time. A removal is the worker's too (below).
			return s, "", false
		case fsm.Stopping:
			// Asked to stop: stopped, whatever the signal's exit code.
			return fsm.Stopped, container.EventStopped, true
		case fsm.Stopped, fsm.Failed:
			return s, "", true // already there: a duplicate
		case fsm.Pending, fsm.Creating, fsm.StartPending:
			if ob.Kind == ObservedDestroyed {
				// The create or start worker is in charge. An engine
				// removes the container of a create it refused, and the
				// worker records the engine's reason; a start makes a
				// missing object again from the stored spec, and a removal
				// seen then is most often the last run's (Kubernetes
				// deletes a stopped Pod, and its watch may deliver that
				// after the start was asked); a removal from outside is
				// found by the worker's next step (or the reconciler's
				// stuck check). Failing here would race the true reason
				// with a false one.
				return s, "", false
			}
		}
		if ob.Kind == ObservedDestroyed {
			return fsm.Failed, container.EventFailed, true
		}
		if ob.OOMKilled || ob.ExitCode == nil || *ob.ExitCode != 0 {
			return fsm.Failed, container.EventFailed, true
		}
		return fsm.Stopped, container.EventExited, true
	}
	return s, "", false
}

func statusReason(from, to fsm.Status, ob Observation) string {
	switch {
	case ob.Kind == ObservedStarted:
		return "running"
	case ob.Kind == ObservedPaused, ob.Kind == ObservedResumed:
		return frozenReason(to)
	case from == fsm.Stopping:
		// Whatever ended it: a runtime whose stop removes the object (a
		// Kubernetes Pod is deleted) reports the stop as a removal.
		return "stopped on request"
	case ob.Kind == ObservedDestroyed:
		return "container removed outside berth"
	case ob.OOMKilled:
		return "killed: out of memory"
	case ob.ExitCode != nil:
		return fmt.Sprintf("exited with code %d", *ob.ExitCode)
	}
	return "exited"
}

func (m *Manager) record(ctx context.Context, inst container.Instance, ob Observation, evType, msg string) error {
	_, err := m.store.AppendEvent(ctx, container.Event{
		InstanceID: inst.ID, Type: evType, From: inst.Status, At: ob.At,
		Message: joinMsg(msg, ob.Message), ExitCode: ob.ExitCode, Actor: container.ActorSystem,
	})
	return err
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}
