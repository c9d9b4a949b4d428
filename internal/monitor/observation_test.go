package monitor

import (
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
)

// TestObservation: the runtime's events as the state loop hears them; a
// pause and a resume are observations of their own (running ⇄ paused),
// never a start or an exit, and an OOM only marks the exit that follows.
func TestObservation(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	oom, mu := map[string]bool{}, &sync.Mutex{}
	for _, c := range []struct {
		kind runtime.EventKind
		want manager.ObservationKind
		ok   bool
	}{
		{runtime.EventStarted, manager.ObservedStarted, true},
		{runtime.EventPaused, manager.ObservedPaused, true},
		{runtime.EventResumed, manager.ObservedResumed, true},
		{runtime.EventOOM, "", false},
		{runtime.EventExited, manager.ObservedExited, true},
		{runtime.EventDestroyed, manager.ObservedDestroyed, true},
		{"renamed", "", false},
	} {
		ob, ok := observation(runtime.Event{InstanceID: "i", Kind: c.kind, Time: at, Node: "h1"}, oom, mu)
		if ok != c.ok || ok && (ob.Kind != c.want || ob.InstanceID != "i" || !ob.At.Equal(at) || ob.NodeName != "h1") {
			t.Errorf("%s: %+v %v, want %s %v", c.kind, ob, ok, c.want, c.ok)
		}
		if c.kind == runtime.EventExited && !ob.OOMKilled {
			t.Errorf("the exit after an OOM event is not marked OOM-killed: %+v", ob)
		}
	}
}
