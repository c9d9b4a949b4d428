package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// TestStatsFunction reads a running container's usage through the logs
// function as API Gateway invokes it (events/logs-stats.json), on DynamoDB
// Local and a real Docker engine: the reading for its owner, 404 for
// anyone else, 409 for an instance that is not running.
func TestStatsFunction(t *testing.T) {
	ctx := context.Background()
	st, rt, res, put := logsFixture(t)
	inst := put("sleep 3600")
	started(t, rt, inst)
	running := inst
	var err error
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
		if running, err = st.Transition(ctx, store.TransitionParams{ID: running.ID, ExpectVersion: running.Version,
			From: running.Status, To: to, Event: &container.Event{Type: "Test", From: running.Status, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	pending := put("true")
	a := newAdapter(config.Default(), st, res, slog.New(slog.DiscardHandler), nil)
	call := func(id, sub string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := a.HandleEvent(ctx, fixtureEvent(t, "logs-stats.json", id, "", sub))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := call(running.ID, owner)
	var s runtime.Stats
	if err := json.Unmarshal([]byte(r.Body), &s); r.StatusCode != http.StatusOK || err != nil || s.Memory.UsageBytes == 0 || s.PIDs == nil {
		t.Fatalf("stats: %d %s (%v)", r.StatusCode, r.Body, err)
	}
	for _, c := range []struct {
		name, id, sub string
		want          int
	}{
		{"another owner's", running.ID, "someone-else", http.StatusNotFound},
		{"not running", pending.ID, owner, http.StatusConflict},
	} {
		if r := call(c.id, c.sub); r.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.StatusCode, r.Body, c.want)
		}
	}
}
