package docker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

// watchedActions are the engine events berth turns into runtime events.
var watchedActions = map[events.Action]runtime.EventKind{
	events.ActionStart:   runtime.EventStarted,
	events.ActionDie:     runtime.EventExited,
	events.ActionOOM:     runtime.EventOOM,
	events.ActionDestroy: runtime.EventDestroyed,
	events.ActionPause:   runtime.EventPaused,
	events.ActionUnPause: runtime.EventResumed,
}

// Watch streams berth's container events from every host (see
// runtime.Runtime.Watch). Each host has its own stream, started at the
// moment of the call so that nothing between the call and the subscription
// is missed, and resumed after a break from its last event's time.
func (r *Runtime) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	return r.WatchSince(ctx, time.Now())
}

// WatchSince is Watch from since, which may be in the past: each engine
// first replays the events it still holds from then on (its event log is
// bounded: dockerd keeps its last 256 events), then streams new ones. A
// watcher that starts after another one stopped (or died) replays the gap
// between them this way.
func (r *Runtime) WatchSince(ctx context.Context, since time.Time) (<-chan runtime.Event, error) {
	out := make(chan runtime.Event, 64)
	done := make(chan struct{}, len(r.hosts))
	for _, h := range r.hosts {
		go func() {
			defer func() { done <- struct{}{} }()
			r.watchHost(ctx, h, since, out)
		}()
	}
	go func() {
		for range r.hosts {
			<-done
		}
		close(out)
	}()
	return out, nil
}

// watchHost follows one host's events until ctx ends, reconnecting with
// backoff (capped at 10s) when the stream breaks or the host is down.
func (r *Runtime) watchHost(ctx context.Context, h *host, since time.Time, out chan<- runtime.Event) {
	f := r.filters().Add("type", string(events.ContainerEventType))
	for a := range watchedActions {
		f.Add("event", string(a))
	}
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		res := h.cli.Events(ctx, client.EventsListOptions{Since: timestamp(since), Filters: f})
		err := func() error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case err := <-res.Err:
					return err
				case m := <-res.Messages:
					backoff = 250 * time.Millisecond // the stream works again
					ev, ok := toEvent(h.cfg.Name, m)
					if m.TimeNano > 0 {
						// Resume just after this event: since is inclusive.
						since = time.Unix(0, m.TimeNano+1)
					}
					if !ok {
						continue
					}
					runTimes(ctx, h, &ev)
					if !stillFrozenAsSaid(ctx, h, ev) {
						continue
					}
					select {
					case out <- ev:
					case <-ctx.Done():
						return nil
					}
				}
			}
		}()
		if ctx.Err() != nil {
			return
		}
		r.log.WarnContext(ctx, "docker event stream broke; reconnecting", "host", h.cfg.Name, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// runTimes gives a start or an exit the times the engine keeps for the
// run (State.StartedAt, State.FinishedAt) in place of the event's, and an
// exit the start of the run it ended (RunStartedAt). The event is stamped
// when dockerd has done its bookkeeping, which for a process that ends at
// once can be after the process ended; the state loop compares these
// times with what the workers and the reconciler inspect, so all speak of
// the same instants. The event's time stays when the container cannot be
// inspected (removed at once).
func runTimes(ctx context.Context, h *host, ev *runtime.Event) {
	if ev.Kind != runtime.EventStarted && ev.Kind != runtime.EventExited {
		return
	}
	res, err := h.cli.ContainerInspect(ctx, ev.RuntimeID, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		return
	}
	if ev.Kind == runtime.EventExited && res.Container.State.Running {
		// Started again since: the exit is of an earlier run (replayed
		// after a reconnect) and the times kept are the new run's.
		return
	}
	started := parseTime(res.Container.State.StartedAt)
	at := started
	if ev.Kind == runtime.EventExited {
		at = parseTime(res.Container.State.FinishedAt)
		if !started.IsZero() {
			run := started.UTC()
			ev.RunStartedAt = &run
		}
	}
	if !at.IsZero() {
		ev.Time = at.UTC()
	}
}

// timestamp is the engine's since format: seconds.nanoseconds.
func timestamp(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}

// toEvent maps an engine message to a runtime event; false for what berth
// does not report.
func toEvent(node string, m events.Message) (runtime.Event, bool) {
	kind, ok := watchedActions[m.Action]
	if !ok || m.Type != events.ContainerEventType {
		return runtime.Event{}, false
	}
	id := m.Actor.Attributes[runtime.LabelInstanceID]
	if id == "" {
		return runtime.Event{}, false
	}
	ev := runtime.Event{InstanceID: id, Kind: kind, Node: node, RuntimeID: m.Actor.ID}
	switch {
	case m.TimeNano > 0:
		ev.Time = time.Unix(0, m.TimeNano).UTC()
	default:
		ev.Time = time.Unix(m.Time, 0).UTC()
	}
	if kind == runtime.EventExited {
		if code, err := strconv.Atoi(m.Actor.Attributes["exitCode"]); err == nil {
			ev.ExitCode = &code
		}
	}
	return ev, true
}
