// Package monitor is the state loop's intake: it watches a runtime's
// lifecycle events and feeds them to manager.OnEvent, so a container that
// exits, is OOM-killed or vanishes between worker steps still moves its
// instance. The reconciler covers events lost while nothing was watching.
package monitor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
)

// StateLoop is the manager's side of the loop.
type StateLoop interface {
	OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error)
}

// Run watches rt until ctx ends, reconnecting after a broken watch. It
// returns when ctx ends.
func Run(ctx context.Context, rt runtime.Runtime, loop StateLoop, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	oom := map[string]bool{} // OOM is reported just before the exit it causes
	// The exits the loop records keep their last words (a failure, a
	// policy's stop), read from rt: the manager holds no runtime.
	lastWords := runtime.LastWordsFrom(rt)
	var mu sync.Mutex
	for ctx.Err() == nil {
		events, err := rt.Watch(ctx)
		if err != nil {
			log.WarnContext(ctx, "watching runtime events", "runtime", rt.Kind(), "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range events {
			ob, ok := observation(ev, oom, &mu)
			if !ok {
				continue
			}
			if ob.Kind == manager.ObservedExited {
				ob.LastWords = lastWords
			}
			if _, err := loop.OnEvent(ctx, ob); err != nil && ctx.Err() == nil {
				// The reconciler's next pass applies what was missed here.
				log.WarnContext(ctx, "applying runtime event", "instance_id", ev.InstanceID, "kind", ev.Kind, "error", err)
			}
		}
	}
}

func observation(ev runtime.Event, oom map[string]bool, mu *sync.Mutex) (manager.Observation, bool) {
	ob := manager.Observation{InstanceID: ev.InstanceID, At: ev.Time, NodeName: ev.Node, RuntimeID: ev.RuntimeID, ExitCode: ev.ExitCode}
	if ev.InstanceID == "" {
		return ob, false
	}
	mu.Lock()
	defer mu.Unlock()
	switch ev.Kind {
	case runtime.EventStarted:
		delete(oom, ev.InstanceID)
		ob.Kind = manager.ObservedStarted
	case runtime.EventOOM:
		oom[ev.InstanceID] = true
		return ob, false
	case runtime.EventExited:
		ob.Kind, ob.RunStartedAt = manager.ObservedExited, ev.RunStartedAt
		ob.OOMKilled = oom[ev.InstanceID]
		delete(oom, ev.InstanceID)
	case runtime.EventDestroyed:
		delete(oom, ev.InstanceID)
		ob.Kind = manager.ObservedDestroyed
	case runtime.EventPaused:
		ob.Kind = manager.ObservedPaused
	case runtime.EventResumed:
		ob.Kind = manager.ObservedResumed
	default:
		return ob, false
	}
	return ob, true
}
