package docker

import (
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/berth-io/berth/internal/runtime"
)

func TestToEvent(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 123, time.UTC)
	msg := func(action events.Action, attrs map[string]string) events.Message {
		return events.Message{Type: events.ContainerEventType, Action: action, TimeNano: at.UnixNano(),
			Actor: events.Actor{ID: "c0ffee", Attributes: attrs}}
	}
	berthAttrs := func(extra ...string) map[string]string {
		m := map[string]string{runtime.LabelInstanceID: "i1", runtime.LabelManaged: "true"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	three := 3
	tests := []struct {
		name string
		msg  events.Message
		want *runtime.Event
	}{
		{"start", msg(events.ActionStart, berthAttrs()), &runtime.Event{Kind: runtime.EventStarted}},
		{"die", msg(events.ActionDie, berthAttrs("exitCode", "3")), &runtime.Event{Kind: runtime.EventExited, ExitCode: &three}},
		{"oom", msg(events.ActionOOM, berthAttrs()), &runtime.Event{Kind: runtime.EventOOM}},
		{"destroy", msg(events.ActionDestroy, berthAttrs()), &runtime.Event{Kind: runtime.EventDestroyed}},
		{"pause", msg(events.ActionPause, berthAttrs()), &runtime.Event{Kind: runtime.EventPaused}},
		{"unpause", msg(events.ActionUnPause, berthAttrs()), &runtime.Event{Kind: runtime.EventResumed}},
		{"other action", msg(events.ActionRename, berthAttrs()), nil},
		{"not berth's", msg(events.ActionStart, map[string]string{}), nil},
		{"image event", events.Message{Type: events.ImageEventType, Action: events.ActionDelete}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := toEvent("h1", tt.msg)
			if tt.want == nil {
				if ok {
					t.Fatalf("got %+v, want nothing", got)
				}
				return
			}
			if !ok || got.Kind != tt.want.Kind || got.InstanceID != "i1" || got.Node != "h1" ||
				got.RuntimeID != "c0ffee" || !got.Time.Equal(at) {
				t.Fatalf("got %+v ok=%v", got, ok)
			}
			if (got.ExitCode == nil) != (tt.want.ExitCode == nil) || (got.ExitCode != nil && *got.ExitCode != *tt.want.ExitCode) {
				t.Fatalf("exit code %v, want %v", got.ExitCode, tt.want.ExitCode)
			}
		})
	}
}
