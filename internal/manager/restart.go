package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// validRestart checks a template's restart policy: a known policy, a
// count ≥ 0, positive durations, backoff ≤ max_backoff ≤
// container.MaxRestartBackoff.
func validRestart(f *fields, r *container.Restart) {
	if r == nil {
		return
	}
	switch r.Policy {
	case container.RestartNever, container.RestartOnFailure, container.RestartAlways:
	default:
		f.add("restart.policy", "must be one of %q, %q, %q, got %q", container.RestartNever, container.RestartOnFailure, container.RestartAlways, r.Policy)
	}
	if r.MaxRestarts != nil && (*r.MaxRestarts < 0 || *r.MaxRestarts > 100) {
		f.add("restart.max_restarts", "must be 0..100, got %d", *r.MaxRestarts)
	}
	base, limit := container.DefaultRestartBackoff, container.DefaultMaxRestartBackoff
	for field, d := range map[string]struct {
		s   string
		out *time.Duration
	}{"restart.backoff": {r.Backoff, &base}, "restart.max_backoff": {r.MaxBackoff, &limit}} {
		if d.s == "" {
			continue
		}
		v, err := container.ParseDuration(d.s)
		if err != nil {
			f.add(field, "%v", err)
			continue
		}
		*d.out = v
	}
	if limit > container.MaxRestartBackoff {
		f.add("restart.max_backoff", "must be at most %s, got %s", container.MaxRestartBackoff, limit)
	}
	if base > limit {
		f.add("restart.backoff", "%s is longer than max_backoff %s", base, limit)
	}
}

// restartFor is the restart an exit of inst (running) seen as ob
// brings under its policy: when, and its number; ok=false when the
// policy does not answer this exit or its restarts are spent (the
// instance then ends as it would without one).
func restartFor(inst container.Instance, ob Observation) (at time.Time, n int, ok bool) {
	if ob.Kind != ObservedExited || inst.Status != fsm.Running ||
		!inst.Restart.Answers(ob.ExitCode, ob.OOMKilled) || inst.Restarts >= inst.Restart.Limit() {
		return time.Time{}, 0, false
	}
	n = inst.Restarts + 1
	return ob.At.Add(inst.Restart.Delay(n)), n, true
}

// scheduleRestart records an exit its policy answers with a restart: the
// instance stays where it is (its container ended) with restart_at set,
// counted, and an event with the exit code and the container's last
// words; the restart's start is asked at restart_at (Expire, by the
// timers or the reconciler). No group policy runs: the instance has not
// ended.
func (m *Manager) scheduleRestart(ctx context.Context, inst container.Instance, ob Observation, at time.Time, n int) (Applied, error) {
	reason := fmt.Sprintf("%s; restart %d of %d at %s", statusReason(inst.Status, fsm.Failed, ob), n, inst.Restart.Limit(),
		at.UTC().Format(time.RFC3339Nano))
	words := m.lastWords(ctx, inst, ob.LastWords)
	_, err := m.store.Transition(ctx, store.TransitionParams{
		ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: inst.Status,
		Update: func(i *container.Instance) {
			end := ob.At
			i.StatusReason, i.FinishedAt, i.Restarts, i.RestartAt = reason, &end, n, &at
			i.ExitCode, i.LastExit = ob.ExitCode, ob.ExitCode
		},
		Event: &container.Event{Type: container.EventRestartScheduled, From: inst.Status, To: inst.Status, At: ob.At,
			Message: joinMsg(reason, ob.Message), ExitCode: ob.ExitCode, Actor: container.ActorSystem, LastWords: words},
	})
	if err != nil {
		return "", err
	}
	m.log.InfoContext(ctx, "restart scheduled", "instance_id", inst.ID, "restart", n, "restart_at", at)
	return AppliedTransition, nil
}

// restartWrite decides the restart at at of inst as it is now: the start
// a user's would be (running → start_pending, its outbox item and event),
// by berth, conditional on that restart_at (store.TransitionParams.Restart).
// It keeps the instance's lifetime and its count of restarts.
func (m *Manager) restartWrite(ctx context.Context, inst container.Instance, at time.Time) (ExpiryOutcome, *store.TransitionParams) {
	if inst.RestartAt == nil || !inst.RestartAt.Equal(at) || inst.Status != fsm.Running {
		return ExpiryMoot, nil
	}
	now := m.now().UTC()
	if now.Before(at) {
		return ExpiryLater, nil
	}
	op := container.OpStart
	reason := fmt.Sprintf("restart %d of %d", inst.Restarts, inst.Restart.Limit())
	p, _ := requestWrite(ctx, inst, request{op: op, to: opStatuses[op].requested, event: opStatuses[op].requestEvent,
		reason: reason, actor: container.ActorSystem, at: now})
	p.Event.ExitCode = inst.LastExit
	r := at
	p.Restart = &r
	return ExpiryActed, p
}

// forgetRestarts makes the start p asked by a user begin a new count of
// restarts.
func forgetRestarts(p *store.TransitionParams) {
	prev := p.Update
	p.Update = func(i *container.Instance) {
		if prev != nil {
			prev(i)
		}
		i.Restarts = 0
	}
}
