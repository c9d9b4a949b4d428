package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// TestWatcherKeepsLastWords: an exit the watcher records keeps the
// container's last lines with its ContainerFailed event, as berth serve's
// state loop does, and the lines are in none of the function's own logs.
func TestWatcherKeepsLastWords(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const why = "why-5d2a: out of memory"
	inst, ref := r.runningScript(ctx, "talker", "echo working; echo '"+why+"' >&2; exec sleep 3600")
	stop := r.invoke(ctx, time.Minute)
	defer stop()
	// The lines are out before the kill: a tail of the engine's log holds both.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n := 0
		if err := r.rt.Logs(ctx, ref, runtime.LogOptions{}, func(runtime.LogLine) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the container's two lines never reached the engine's log")
		}
	}
	r.kill(ctx, ref)
	r.status(ctx, inst.ID, fsm.Failed, 30*time.Second)
	page, err := r.st.ListEvents(ctx, inst.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var failed *container.Event
	for i, e := range page.Items {
		if e.Type == container.EventFailed {
			failed = &page.Items[i]
		}
	}
	if failed == nil || failed.LastWords == nil {
		t.Fatalf("no last words on the failure: %+v", page.Items)
	}
	got := map[string]string{}
	for _, l := range failed.LastWords.Lines {
		got[l.Stream] += l.Text
	}
	if got["stdout"] != "working" || got["stderr"] != why {
		t.Errorf("last words %+v", failed.LastWords)
	}
	if strings.Contains(r.logs.String(), "why-5d2a") {
		t.Errorf("the container's output is in the function's log")
	}
}
