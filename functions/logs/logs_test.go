package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// fixtureID is the container id written in the fixture's path.
const fixtureID = "01JDQ7ZP3K9Y6V4M8N2B5C7D1E"

// owner is the fixture's sub claim: the caller the function sees.
const owner = "7d2e4f60-1b3a-4c5d-8e9f-0a1b2c3d4e5f"

// followEvent reads events/logs-follow.json with the container id, the
// query and the caller's sub replaced.
func followEvent(t *testing.T, id, query, sub string) lambdahttp.Event {
	t.Helper()
	return fixtureEvent(t, "logs-follow.json", id, query, sub)
}

// fixtureEvent reads events/<name> with the container id and the caller's
// sub replaced, and the query when one is given, through the adapter's own
// event type as lambda.Start decodes it.
func fixtureEvent(t *testing.T, name, id, query, sub string) lambdahttp.Event {
	t.Helper()
	raw, err := os.ReadFile("../../events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte(fixtureID), []byte(id))
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if query != "" {
		ev.RawQueryString = query
	}
	ev.RequestContext.Authorizer.JWT.Claims["sub"] = sub
	if raw, err = json.Marshal(ev); err != nil {
		t.Fatal(err)
	}
	var lev lambdahttp.Event
	if err := json.Unmarshal(raw, &lev); err != nil {
		t.Fatal(err)
	}
	return lev
}

// logsFixture is a logs function's world: a store on DynamoDB Local
// (tables of its own), a real Docker engine as host h1 and its resolver,
// and put, which stores an instance of owner that runs command on h1
// (pending: not created on the engine).
func logsFixture(t *testing.T) (*dynamostore.Store, *docker.Runtime, *runtime.Resolver, func(command string) container.Instance) {
	t.Helper()
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("logsfn%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: "h1", Endpoint: testenv.DockerHost(t)}}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runtime.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock()
	put := func(command string) container.Instance {
		t.Helper()
		p := storetest.NewCreate(clock, owner)
		p.Instance.RuntimeNodeName = "h1"
		p.Instance.Spec = container.Spec{Runtime: container.RuntimeDocker, Image: testenv.TestImage(t),
			PullPolicy: container.PullNever, Command: []string{"sh", "-c", command}}
		inst, err := st.CreateInstance(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	return st, rt, res, put
}

// started creates inst's container on the engine and starts it; it is
// deleted when the test ends.
func started(t *testing.T, rt *docker.Runtime, inst container.Instance) {
	t.Helper()
	ctx := context.Background()
	ref, err := rt.Create(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Delete(context.Background(), ref) })
	if err := rt.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}
}

// runToEnd starts inst's container (started) and returns once it has
// ended.
func runToEnd(t *testing.T, rt *docker.Runtime, res *runtime.Resolver, inst container.Instance) {
	t.Helper()
	ctx := context.Background()
	started(t, rt, inst)
	// A follow ends when the container does: the signal that all is printed.
	if err := res.Logs(ctx, inst, runtime.LogOptions{Follow: true}, func(runtime.LogLine) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestLogsFunction reads a container's output through the logs function
// as API Gateway invokes it (events/logs-follow.json), on DynamoDB Local
// and a real Docker engine: the bounded answer, a follow answered with the
// cursor to poll with (and the poll after it), owners only, a container
// not on its runtime, and no other route.
func TestLogsFunction(t *testing.T) {
	ctx := context.Background()
	st, rt, res, put := logsFixture(t)
	printed := put("echo err1 >&2; sleep 0.2; seq 1 3 | sed s/^/l/")
	runToEnd(t, rt, res, printed)
	pending := put("true") // never created: not on its runtime

	a := newAdapter(config.Default(), st, res, slog.New(slog.DiscardHandler), nil)
	call := func(id, query, sub string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := a.HandleEvent(ctx, followEvent(t, id, query, sub))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	// The fixture as it is: follow=true&tail=2, answered at once with the
	// cursor just after the last line.
	f := call(printed.ID, "", owner)
	next := f.Headers[httpapi.NextSinceHeader]
	at, perr := time.Parse(time.RFC3339Nano, next)
	if f.StatusCode != http.StatusOK || f.Body != "l2\nl3\n" || f.Headers[httpapi.LogsFollowHeader] != "poll" || perr != nil {
		t.Fatalf("follow: %d %q, headers %v", f.StatusCode, f.Body, f.Headers)
	}
	// The poll after it has nothing new, and keeps the cursor.
	p := call(printed.ID, "follow=true&since="+next, owner)
	if p.StatusCode != http.StatusOK || p.Body != "" || p.Headers[httpapi.NextSinceHeader] != at.UTC().Format(time.RFC3339Nano) {
		t.Errorf("poll: %d %q, headers %v", p.StatusCode, p.Body, p.Headers)
	}
	for _, c := range []struct {
		query, want string
	}{
		{"tail=100", "err1\nl1\nl2\nl3\n"},
		{"stream=stderr", "err1\n"},
		{"follow=true&stream=stdout&since=" + next, ""},
	} {
		r := call(printed.ID, c.query, owner)
		if r.StatusCode != http.StatusOK || r.Body != c.want {
			t.Errorf("%s: %d %q, want %q", c.query, r.StatusCode, r.Body, c.want)
		}
		if _, cursor := r.Headers[httpapi.NextSinceHeader]; cursor != (c.query[:6] == "follow") {
			t.Errorf("%s: cursor %v", c.query, r.Headers)
		}
	}
	for _, c := range []struct {
		name, id, query, sub string
		want                 int
	}{
		{"another owner's", printed.ID, "", "someone-else", http.StatusNotFound},
		{"missing", "nosuch", "", owner, http.StatusNotFound},
		{"bad option", printed.ID, "tail=0", owner, http.StatusBadRequest},
		{"not on its runtime", pending.ID, "", owner, http.StatusConflict},
	} {
		if r := call(c.id, c.query, c.sub); r.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.StatusCode, r.Body, c.want)
		}
	}
	// The function serves the logs route only.
	ev := followEvent(t, printed.ID, "", owner)
	ev.RawPath = "/api/containers/" + printed.ID
	ev.RequestContext.HTTP.Path = ev.RawPath
	if r, err := a.HandleEvent(ctx, ev); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("GET the instance through the logs function: %d %v", r.StatusCode, err)
	}
}
