package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// fixtureID is the container id written in the fixture's path.
const fixtureID = "01JDQ7ZP3K9Y6V4M8N2B5C7D1E"

// owner is the fixture's sub claim: the caller the function sees.
const owner = "7d2e4f60-1b3a-4c5d-8e9f-0a1b2c3d4e5f"

// fixtureEvent reads events/exec-run.json, as lambda.Start decodes it,
// with the container id, the caller's sub and (when given) the body
// replaced.
func fixtureEvent(t *testing.T, id, sub, body string) lambdahttp.Event {
	t.Helper()
	raw, err := os.ReadFile("../../events/exec-run.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte(fixtureID), []byte(id))
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev.RequestContext.Authorizer.JWT.Claims["sub"] = sub
	if body != "" {
		ev.Body = body
		ev.Headers["content-length"] = fmt.Sprint(len(body))
	}
	if raw, err = json.Marshal(ev); err != nil {
		t.Fatal(err)
	}
	var lev lambdahttp.Event
	if err := json.Unmarshal(raw, &lev); err != nil {
		t.Fatal(err)
	}
	return lev
}

// TestExecFunction runs commands through the exec function as API Gateway
// invokes it (events/exec-run.json), on DynamoDB Local and a real Docker
// engine: the fixture's command answers its exit code and both streams
// apart; another owner gets 404, a template without exec 403, an instance
// that is not running 409, a timeout past the function's 25 s 422; both
// events are in the history with the caller as actor and without the
// output; no other route is served.
func TestExecFunction(t *testing.T) {
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("execfn%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: "h1", Endpoint: testenv.DockerHost(t), NetworkMode: "none"}}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runtime.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]bool{"shell": true, "closed": false} {
		if _, _, err := st.PutTemplate(ctx, container.Template{Name: name, Runtime: container.RuntimeDocker, Image: testenv.TestImage(t), Exec: open}); err != nil {
			t.Fatal(err)
		}
	}
	clock := storetest.NewClock()
	put := func(tpl string, run bool) container.Instance {
		t.Helper()
		p := storetest.NewCreate(clock, owner)
		p.Instance.Template, p.Instance.RuntimeNodeName = tpl, "h1"
		p.Instance.Spec = container.Spec{Runtime: container.RuntimeDocker, Image: testenv.TestImage(t),
			PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exec sleep 3600"}}
		inst, err := st.CreateInstance(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !run {
			return inst
		}
		ref, err := rt.Create(ctx, inst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Delete(context.Background(), ref) })
		if err := rt.Start(ctx, ref); err != nil {
			t.Fatal(err)
		}
		for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
			if inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
				From: inst.Status, To: to, Event: &container.Event{Type: "Test", From: inst.Status, To: to}}); err != nil {
				t.Fatal(err)
			}
		}
		return inst
	}
	open, closed, pending := put("shell", true), put("closed", true), put("shell", false)

	a := newAdapter(config.Default(), st, res, slog.New(slog.DiscardHandler), nil)
	call := func(id, sub, body string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := a.HandleEvent(ctx, fixtureEvent(t, id, sub, body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := call(open.ID, owner, "")
	var got struct {
		ExitCode *int   `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if err := json.Unmarshal([]byte(r.Body), &got); r.StatusCode != http.StatusOK || err != nil ||
		got.ExitCode == nil || *got.ExitCode != 3 || got.Stdout != "out\n" || got.Stderr != "err\n" {
		t.Fatalf("exec: %d %s (%v)", r.StatusCode, r.Body, err)
	}
	for _, c := range []struct {
		name, id, sub, body string
		want                int
	}{
		{"another owner's", open.ID, "someone-else", "", http.StatusNotFound},
		{"a template without exec", closed.ID, owner, "", http.StatusForbidden},
		{"not running", pending.ID, owner, "", http.StatusConflict},
		{"past API Gateway's time", open.ID, owner, `{"command":["true"],"timeout":"26s"}`, http.StatusUnprocessableEntity},
	} {
		if r := call(c.id, c.sub, c.body); r.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.StatusCode, r.Body, c.want)
		}
	}
	evs, err := st.ListEvents(ctx, open.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.Type, "ContainerExec") {
			kinds = append(kinds, ev.Type)
			if ev.Actor != owner || strings.Contains(ev.Message, "out\\n") {
				t.Errorf("exec event %+v: want the caller as actor, no output", ev)
			}
		}
	}
	if strings.Join(kinds, ",") != container.EventExecStarted+","+container.EventExecFinished {
		t.Errorf("exec events %v: want one start and one end", kinds)
	}

	// Only the exec route: the function serves nothing else.
	ev := fixtureEvent(t, open.ID, owner, "")
	ev.RawPath = "/api/containers/" + open.ID + "/stats"
	ev.RequestContext.HTTP.Path = ev.RawPath
	ev.RequestContext.HTTP.Method = http.MethodGet
	if r, err := a.HandleEvent(ctx, ev); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("another route: %d (%v), want 404", r.StatusCode, err)
	}
}
