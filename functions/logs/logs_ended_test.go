package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/store"
)

// TestLogsFollowEnded: a polled follow of a container whose end is
// recorded says Berth-Follow: ended on the answer that holds its last
// line, so a client stops polling there; an answer cut at the bound still
// says poll, and the poll after it, with the rest, says ended.
func TestLogsFollowEnded(t *testing.T) {
	ctx := context.Background()
	st, rt, res, put := logsFixture(t)
	inst := put("seq 1 10005 | sed s/^/l/; exit 2")
	// It has ended on the engine; then its end is recorded, as the watcher
	// or the reconciler would.
	runToEnd(t, rt, res, inst)
	if _, err := st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Pending, To: fsm.Failed,
		Event: &container.Event{Type: "ContainerFailed", From: fsm.Pending, To: fsm.Failed, At: time.Now(), Actor: container.ActorSystem}}); err != nil {
		t.Fatal(err)
	}

	a := newAdapter(config.Default(), st, res, slog.New(slog.DiscardHandler), nil)
	get := func(query string) (follow, next, body string) {
		t.Helper()
		r, err := a.HandleEvent(ctx, followEvent(t, inst.ID, query, owner))
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v %s", query, r.StatusCode, err, r.Body)
		}
		return r.Headers[httpapi.LogsFollowHeader], r.Headers[httpapi.NextSinceHeader], r.Body
	}
	follow, next, body := get("follow=true")
	if follow != httpapi.LogsFollowPoll || strings.Count(body, "\n") != httpapi.DefaultLogsMaxLines || next == "" {
		t.Fatalf("the first, cut answer: Berth-Follow %q, %d lines, cursor %q", follow, strings.Count(body, "\n"), next)
	}
	follow, after, body := get("follow=true&since=" + next)
	if follow != httpapi.LogsFollowEnded || body != "l10001\nl10002\nl10003\nl10004\nl10005\n" || after == "" {
		t.Errorf("the rest: Berth-Follow %q, %q, cursor %q", follow, body, after)
	}
	if follow, _, body := get("follow=true&tail=2"); follow != httpapi.LogsFollowEnded || body != "l10004\nl10005\n" {
		t.Errorf("tail=2: Berth-Follow %q, %q", follow, body)
	}
	// A read that does not follow says nothing of it.
	if follow, _, _ := get("tail=1"); follow != "" {
		t.Errorf("a read without follow: Berth-Follow %q", follow)
	}
}
