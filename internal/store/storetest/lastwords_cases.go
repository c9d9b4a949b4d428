package storetest

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// lastWordsFixture is LastWords at their bounds: the most lines, the most
// bytes in one of them, an empty line, text beyond ASCII and both streams.
func lastWordsFixture(tag string) *container.LastWords {
	lw := &container.LastWords{Truncated: true}
	for i := range container.LastWordsMaxLines - 3 {
		lw.Lines = append(lw.Lines, container.OutputLine{Stream: "stdout", Text: tag + " line " + string(rune('a'+i%26))})
	}
	lw.Lines = append(lw.Lines,
		container.OutputLine{Stream: "stderr", Text: ""},
		container.OutputLine{Text: "ünïcødé \u2603 \ufffd"},
		container.OutputLine{Stream: "stderr", Text: strings.Repeat("x", container.LastWordsMaxBytes/2)})
	return lw
}

// testLastWords: an event's last words come back as written from every
// write that records an event (a transition, an append, a delete), and an
// event without them has none.
func testLastWords(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	inst := mustCreate(t, s, p)
	inst = move(t, s, c, inst, fsm.Creating)
	code := 3
	failed := lastWordsFixture("failed")
	inst, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: fsm.Failed,
		Event: &container.Event{Type: container.EventFailed, From: inst.Status, To: fsm.Failed, At: c.Now(), ExitCode: &code,
			Actor: container.ActorSystem, LastWords: failed}})
	if err != nil {
		t.Fatalf("Transition with last words: %v", err)
	}
	appended := &container.LastWords{Lines: []container.OutputLine{{Stream: "stdout", Text: "bye"}}}
	if _, err := s.AppendEvent(ctx, container.Event{InstanceID: inst.ID, Type: container.EventReconciled, At: c.Now(), LastWords: appended}); err != nil {
		t.Fatalf("AppendEvent with last words: %v", err)
	}
	inst = move(t, s, c, inst, fsm.DeletePending)
	inst = move(t, s, c, inst, fsm.Deleting)
	deleted := lastWordsFixture("deleted")
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version,
		Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, At: c.Now(), LastWords: deleted}}); err != nil {
		t.Fatalf("DeleteInstance with last words: %v", err)
	}
	evs := allEvents(t, s, inst.ID, 3)
	checkGapless(t, evs)
	want := map[string]*container.LastWords{container.EventFailed: failed, container.EventReconciled: appended, container.EventDeleted: deleted}
	seen := 0
	for _, ev := range evs {
		w, ok := want[ev.Type]
		if !ok {
			if ev.LastWords != nil {
				t.Errorf("event %d (%s) has last words it was not given: %+v", ev.Seq, ev.Type, ev.LastWords)
			}
			continue
		}
		seen++
		if !reflect.DeepEqual(ev.LastWords, w) {
			t.Errorf("event %d (%s): last words differ from those written (%d lines, truncated %v; want %d, %v)",
				ev.Seq, ev.Type, lines(ev.LastWords), ev.LastWords != nil && ev.LastWords.Truncated, len(w.Lines), w.Truncated)
		}
	}
	if seen != len(want) {
		t.Fatalf("events with last words: %d of %d in %+v", seen, len(want), evs)
	}
}

func lines(lw *container.LastWords) int {
	if lw == nil {
		return -1
	}
	return len(lw.Lines)
}
