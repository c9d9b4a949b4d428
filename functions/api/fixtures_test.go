package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/console"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// eventsDir holds the sample events (events/api-*.json).
const eventsDir = "../../events"

// fixtureID is the container id written in the fixtures' paths; tests
// replace it with the id of a container they created.
const fixtureID = "01JDQ7ZP3K9Y6V4M8N2B5C7D1E"

func fixtureFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(eventsDir, "api-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events/api-*.json fixtures (%v)", err)
	}
	return files
}

// fixture reads events/api-<name>.json with the container id replaced.
func fixture(t testing.TB, name, id string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eventsDir, "api-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		raw = bytes.ReplaceAll(raw, []byte(fixtureID), []byte(id))
	}
	return raw
}

func fixtureEvent(t testing.TB, name, id string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, name, id), &ev); err != nil {
		t.Fatalf("api-%s.json: %v", name, err)
	}
	return ev
}

// TestFixturesRoundTrip keeps the fixtures in API Gateway's own shape:
// each one decodes into events.APIGatewayV2HTTPRequest with every field
// known (a misspelt or invented field would be dropped) and encodes back to
// the same JSON, apart from empty values the SDK type always writes
// (such as requestContext.authentication without mTLS).
func TestFixturesRoundTrip(t *testing.T) {
	for _, f := range fixtureFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ev := testenv.RoundTrip[events.APIGatewayV2HTTPRequest](t, f, pruneZero)
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			back, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			_ = json.Unmarshal(raw, &want)
			_ = json.Unmarshal(back, &got)
			for _, k := range missingKeys(want, got, "") {
				t.Errorf("key %s of the file is not in the round trip (misspelt?)", k)
			}
			checkRealShape(t, ev)
		})
	}
}

// checkRealShape checks what API Gateway always does: payload 2.0,
// lowercase header names, rawPath equal to http.path, a request id.
func checkRealShape(t *testing.T, ev events.APIGatewayV2HTTPRequest) {
	t.Helper()
	if ev.Version != "2.0" {
		t.Errorf("version %q, want 2.0", ev.Version)
	}
	switch ev.RouteKey {
	case "$default", "ANY /{proxy+}":
	case "GET /api/openapi.json", "GET /livez", "GET /readyz", "GET /", "GET /console": // the stack's routes without the authorizer
		if ev.RequestContext.Authorizer != nil || ev.RawPath != strings.TrimPrefix(ev.RouteKey, "GET ") {
			t.Errorf("routeKey %q with an authorizer or path %q", ev.RouteKey, ev.RawPath)
		}
	case "GET /console/{proxy+}": // the console's files, without the authorizer
		if ev.RequestContext.Authorizer != nil || ev.RawPath != "/console/"+ev.PathParameters["proxy"] {
			t.Errorf("routeKey %q with an authorizer or path %q (proxy %q)", ev.RouteKey, ev.RawPath, ev.PathParameters["proxy"])
		}
	default:
		t.Errorf("routeKey %q", ev.RouteKey)
	}
	if ev.RequestContext.RouteKey != ev.RouteKey {
		t.Errorf("requestContext.routeKey %q != routeKey %q", ev.RequestContext.RouteKey, ev.RouteKey)
	}
	if ev.RouteKey == "ANY /{proxy+}" && "/"+ev.PathParameters["proxy"] != ev.RawPath {
		t.Errorf("pathParameters.proxy %q does not match rawPath %q", ev.PathParameters["proxy"], ev.RawPath)
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("header %q is not lowercase", k)
		}
	}
	if ev.RawPath != ev.RequestContext.HTTP.Path || ev.RequestContext.HTTP.Method == "" || ev.RequestContext.RequestID == "" {
		t.Errorf("rawPath %q, http %+v, requestId %q", ev.RawPath, ev.RequestContext.HTTP, ev.RequestContext.RequestID)
	}
	if ev.Headers["host"] != ev.RequestContext.DomainName {
		t.Errorf("host %q != domainName %q", ev.Headers["host"], ev.RequestContext.DomainName)
	}
	if az := ev.RequestContext.Authorizer; az != nil && (az.JWT == nil || az.JWT.Claims["sub"] == "") {
		t.Errorf("authorizer without jwt claims and sub: %+v", az)
	}
}

// missingKeys lists the object keys of want (by path) that got lacks,
// compared exactly (encoding/json matches field names case-insensitively).
func missingKeys(want, got any, path string) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, missingKeys(v, gv, path+"."+k)...)
		}
	case []any:
		g, _ := got.([]any)
		for i := range w {
			if i < len(g) {
				out = append(out, missingKeys(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

// pruneZero drops null, "", 0, false, {} and [] values from decoded JSON,
// recursively.
func pruneZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = pruneZero(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneZero(e)
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	case float64:
		if x == 0 {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	}
	return v
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestAdapter is the function's handler, wired as main wires it, on s.
func newTestAdapter(t testing.TB, s store.Store) *lambdahttp.Adapter {
	t.Helper()
	cfg, err := loadConfig(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return newAdapter(cfg, s, quietLogger(), nil)
}

// step is one fixture sent in a scenario and the status it must get.
type step struct {
	fixture string
	want    int
	// before moves the created instance the way workers would, first.
	before []fsm.Status
}

// scenario is the fixtures in an order that reaches each one's success
// status, with the instance driven between them as workers would.
var scenario = []step{
	{fixture: "missing-auth", want: 401},
	{fixture: "openapi", want: 200}, // the document needs no token
	{fixture: "livez", want: 200},   // nor do the probes
	{fixture: "readyz", want: 200},
	{fixture: "healthz", want: 200},      // an admin's
	{fixture: "metrics", want: 501},      // an admin's: berth serve's Prometheus metrics are CloudWatch's here
	{fixture: "console-root", want: 302}, // the web console, to anyone: GET / sends a browser to it
	{fixture: "console", want: 200},
	{fixture: "console-asset", want: 200},
	{fixture: "list-bind-ledger", want: 200},
	{fixture: "retire-bind-ledger", want: 404}, // no such entry
	{fixture: "create-webhook", want: 201},
	{fixture: "list-webhooks", want: 200},
	{fixture: "get-webhook", want: 404},             // the fixture's id is no subscription
	{fixture: "delete-webhook", want: 404},          // nor here
	{fixture: "list-webhook-deliveries", want: 404}, // nor here
	{fixture: "redeliver-webhook", want: 404},       // nor here
	{fixture: "my-quotas", want: 200},
	{fixture: "list-quotas", want: 200},
	{fixture: "get-user-quota", want: 404}, // no override yet
	{fixture: "put-user-quota", want: 200},
	{fixture: "get-user-quota", want: 200},
	{fixture: "delete-user-quota", want: 204},
	{fixture: "delete-user-quota", want: 404},
	{fixture: "put-team-quota", want: 200},
	{fixture: "get-team-quota", want: 200},
	{fixture: "delete-team-quota", want: 204},
	{fixture: "create", want: 422}, // no such template yet
	{fixture: "put-template", want: 201},
	{fixture: "put-template", want: 200},
	{fixture: "put-template-not-admin", want: 403}, // without the admin group
	{fixture: "list-templates", want: 200},
	{fixture: "get-template", want: 200},
	{fixture: "bad-json", want: 400},
	{fixture: "create-base64", want: 202},
	{fixture: "create", want: 202}, // its id is the one substituted from here on
	{fixture: "list-groups", want: 200},
	{fixture: "get-group", want: 200}, // run-42: the created container
	{fixture: "get", want: 200},
	{fixture: "events", want: 200},
	{fixture: "usage", want: 200}, // alice's creates so far, by template
	{fixture: "logs", want: 501},  // the api function holds no runtime client
	{fixture: "stats", want: 501}, // nor does it read usage: the logs function does
	{fixture: "exec", want: 501},  // nor run commands: the exec function does
	{fixture: "wait", want: 200},  // status=pending: already there
	{fixture: "list", want: 200},
	{fixture: "start", want: 409},  // pending: nothing to start yet
	{fixture: "delete", want: 404}, // as someone else: see scenarioAsOther
	{fixture: "extend", want: 409}, // the fixture's template sets no lifetime
	{fixture: "pause", want: 202, before: []fsm.Status{fsm.Creating, fsm.Running}},
	{fixture: "resume", want: 200},                                  // running: nothing to resume
	{fixture: "pause", want: 200, before: []fsm.Status{fsm.Paused}}, // paused already
	{fixture: "resume", want: 202},
	{fixture: "stop", want: 202}, // a paused container is stopped like a running one
	{fixture: "stop", want: 200}, // already stop_pending: nothing new
	{fixture: "start", want: 202, before: []fsm.Status{fsm.Stopping, fsm.Stopped}},
	{fixture: "delete", want: 202, before: []fsm.Status{fsm.Starting, fsm.Running}},
	{fixture: "delete", want: 202}, // already delete_pending
	{fixture: "finish-group", want: 202},
	{fixture: "reset-group", want: 202},
	{fixture: "delete-template", want: 204},
	{fixture: "get-template", want: 404},
	{fixture: "missing-auth", want: 401},
}

// TestFixtures sends every fixture through the adapter and the real handler
// on each store backend and checks the statuses.
func TestFixtures(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		s := b.Open(t, time.Now)
		a := newTestAdapter(t, s)
		runScenario(t, s, func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
			resp, err := a.Handle(context.Background(), ev)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			return resp
		})
	})
}

// runScenario sends the scenario's fixtures through invoke, driving the
// created instance in s between steps, and checks every answer. It returns
// the id of the instance it created (delete_pending at the end).
func runScenario(t *testing.T, s store.Store, invoke func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	id := ""
	used := map[string]bool{}
	for i, st := range scenario {
		for _, to := range st.before {
			drive(t, s, id, to)
		}
		ev := fixtureEvent(t, st.fixture, id)
		if st.fixture == "delete" && st.want == 404 {
			// The fixture's caller with another subject: another user's
			// container is not found, not forbidden.
			ev.RequestContext.Authorizer.JWT.Claims["sub"] = "someone-else"
		}
		resp := invoke(ev)
		if resp.StatusCode != st.want {
			t.Fatalf("step %d (%s): status %d, want %d: %s", i, st.fixture, resp.StatusCode, st.want, resp.Body)
		}
		used[st.fixture] = true
		if strings.HasPrefix(st.fixture, "console") {
			// Not the API: static files, outside the OpenAPI document.
			checkConsole(t, st.fixture, ev, resp)
			continue
		}
		checkResponse(t, st.fixture, ev, resp)
		checkContract(t, st.fixture, ev, resp)
		if st.fixture == "create" && resp.StatusCode == http.StatusAccepted {
			var in container.Instance
			if err := json.Unmarshal([]byte(resp.Body), &in); err != nil || in.ID == "" {
				t.Fatalf("create: %v: %s", err, resp.Body)
			}
			if in.Owner != ev.RequestContext.Authorizer.JWT.Claims["sub"] || in.Name != "web-1" || in.Status != fsm.Pending {
				t.Errorf("created %+v", in)
			}
			if resp.Headers["Location"] != "/api/containers/"+in.ID {
				t.Errorf("Location %q", resp.Headers["Location"])
			}
			id = in.ID
		}
		if st.fixture == "list" {
			var page struct{ Items []container.Instance }
			if err := json.Unmarshal([]byte(resp.Body), &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != id {
				t.Errorf("list (status pending/running, label team=a) = %s, want only %s", resp.Body, id)
			}
		}
	}
	for _, f := range fixtureFiles(t) {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "api-"), ".json")
		if !used[name] {
			t.Errorf("fixture %s is not used by the scenario", filepath.Base(f))
		}
	}
	inst, err := s.GetInstance(context.Background(), id)
	if err != nil || inst.Status != fsm.DeletePending {
		t.Errorf("at the end: %s %v, want delete_pending", inst.Status, err)
	}
	return id
}

// checkResponse checks what every answer carries: API Gateway's request id,
// a JSON body (problem+json for errors) that is not base64 encoded.
func checkResponse(t *testing.T, name string, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if got := resp.Headers["X-Request-Id"]; got != ev.RequestContext.RequestID {
		t.Errorf("%s: X-Request-Id %q, want API Gateway's %q", name, got, ev.RequestContext.RequestID)
	}
	if resp.StatusCode == http.StatusNoContent {
		if resp.Body != "" {
			t.Errorf("%s: 204 with a body %q", name, resp.Body)
		}
		return
	}
	wantCT := "application/json"
	if resp.StatusCode >= 400 {
		wantCT = "application/problem+json"
	}
	if ct := resp.Headers["Content-Type"]; ct != wantCT || resp.IsBase64Encoded || !json.Valid([]byte(resp.Body)) {
		t.Errorf("%s: Content-Type %q (want %q), base64 %v, body %q", name, ct, wantCT, resp.IsBase64Encoded, resp.Body)
	}
}

// checkConsole checks a console answer: API Gateway's request id, the
// console's Content-Security-Policy, and the page, its script or the
// redirect to it.
func checkConsole(t *testing.T, name string, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if got := resp.Headers["X-Request-Id"]; got != ev.RequestContext.RequestID {
		t.Errorf("%s: X-Request-Id %q, want API Gateway's %q", name, got, ev.RequestContext.RequestID)
	}
	if resp.StatusCode == http.StatusFound {
		if loc := resp.Headers["Location"]; loc != console.Path {
			t.Errorf("%s: Location %q, want %s", name, loc, console.Path)
		}
		return
	}
	if csp := resp.Headers["Content-Security-Policy"]; csp != console.CSP {
		t.Errorf("%s: Content-Security-Policy %q, want the console's", name, csp)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			t.Fatalf("%s: base64 body: %v", name, err)
		}
	}
	if resp.Headers["Content-Encoding"] == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: gzip body: %v", name, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: gzip body: %v", name, err)
		}
	}
	want := map[string]struct{ ctype, text string }{
		"console":       {"text/html; charset=utf-8", `<script type="module" src="/console/app.js">`},
		"console-asset": {"text/javascript; charset=utf-8", "berth console"},
	}[name]
	if ct := resp.Headers["Content-Type"]; ct != want.ctype || !bytes.Contains(body, []byte(want.text)) {
		t.Errorf("%s: Content-Type %q (want %q), body without %q: %.200s", name, ct, want.ctype, want.text, body)
	}
}

// checkContract checks an exchange against docs/openapi.yaml, as the
// httpapi tests check theirs: the function answers as the document says.
func checkContract(t *testing.T, name string, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	decode := func(s string, b64 bool) []byte {
		if !b64 {
			return []byte(s)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("%s: base64 body: %v", name, err)
		}
		return b
	}
	target := ev.RawPath
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	body := decode(ev.Body, ev.IsBase64Encoded)
	req := httptest.NewRequest(ev.RequestContext.HTTP.Method, target, bytes.NewReader(body))
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	x := apicontract.Exchange{Request: req, RequestBody: body, Status: resp.StatusCode, Header: header,
		Body: decode(resp.Body, resp.IsBase64Encoded)}
	if err := apicontract.Shared(t).Check(context.Background(), x); err != nil {
		t.Errorf("%s: %s %s → %d departs from docs/openapi.yaml: %v", name, req.Method, target, resp.StatusCode, err)
	}
}

// drive moves the instance one step as a worker or the runtime would.
func drive(t testing.TB, s store.Store, id string, to fsm.Status) {
	t.Helper()
	ctx := context.Background()
	inst, err := s.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Transition(ctx, store.TransitionParams{ID: id, ExpectVersion: inst.Version, From: inst.Status, To: to,
		Event: &container.Event{Type: "Test", From: inst.Status, To: to, At: time.Now(), Actor: container.ActorSystem}})
	if err != nil {
		t.Fatalf("drive %s: %s → %s: %v", id, inst.Status, to, err)
	}
}

// TestLoadConfig checks the function's own configuration rules.
func TestLoadConfig(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := loadConfig(env(map[string]string{"BERTH_STORE_TABLE_PREFIX": "prod-", "BERTH_AUTH_ADMIN_GROUP": "ops"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Backend != config.StoreDynamoDB || cfg.Store.TablePrefix != "prod-" || cfg.Auth.AdminGroup != "ops" || cfg.Auth.AdminClaim != "cognito:groups" {
		t.Errorf("config %+v %+v", cfg.Store, cfg.Auth)
	}
	if _, err := loadConfig(env(map[string]string{"BERTH_STORE_BACKEND": "bolt"})); err == nil {
		t.Error("store.backend=bolt accepted")
	}
	if _, err := loadConfig(env(map[string]string{"BERTH_STORE_TABLE_PREFIX": "bad prefix/"})); err == nil {
		t.Error("an invalid table prefix accepted")
	}
}

// TestAdminClaimFromConfig: auth.admin_claim and auth.admin_group reach
// the adapter (an admin lists everyone's containers with owner=).
func TestAdminClaimFromConfig(t *testing.T) {
	s := teststores.Bolt(t, time.Now)
	cfg, err := loadConfig(func(k string) (string, bool) {
		v, ok := map[string]string{"BERTH_AUTH_ADMIN_CLAIM": "groups", "BERTH_AUTH_ADMIN_GROUP": "platform"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	a := newAdapter(cfg, s, quietLogger(), nil)
	ev := fixtureEvent(t, "put-template", "")
	claims := ev.RequestContext.Authorizer.JWT.Claims
	if resp, _ := a.Handle(context.Background(), ev); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cognito:groups no longer configured, still admin: %d %s", resp.StatusCode, resp.Body)
	}
	claims["groups"] = "ops,platform"
	if resp, _ := a.Handle(context.Background(), ev); resp.StatusCode != http.StatusCreated {
		t.Fatalf("groups=ops,platform not admin: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestEveryRouteHasAFixture: each route the function's handler serves
// (httpapi.Routes, which the OpenAPI document's test holds equal to
// docs/openapi.yaml's paths) has an events/api-*.json fixture with its
// method and a path it matches, so TestFixtures sends it through the
// function. HEAD is GET without the body: a GET fixture covers it.
func TestEveryRouteHasAFixture(t *testing.T) {
	h := httpapi.New(httpapi.Options{Auth: httpapi.ContextAuth(), Health: storeHealth(nil)})
	routes := httpapi.Routes(h)
	if len(routes) == 0 {
		t.Fatal("the handler lists no routes")
	}
	type call struct{ method, path string }
	var calls []call
	for _, f := range fixtureFiles(t) {
		var ev events.APIGatewayV2HTTPRequest
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		calls = append(calls, call{ev.RequestContext.HTTP.Method, ev.RawPath})
	}
	for _, r := range routes {
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet
		}
		covered := slices.ContainsFunc(calls, func(c call) bool { return c.method == method && patternMatches(r.Pattern, c.path) })
		if !covered {
			t.Errorf("%s %s has no events/api-*.json fixture", r.Method, r.Pattern)
		}
	}
}

// patternMatches reports whether path matches a ServeMux pattern whose
// wildcards ({id}) are whole segments.
func patternMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		wild := strings.HasPrefix(ps[i], "{") && strings.HasSuffix(ps[i], "}")
		if (wild && xs[i] == "") || (!wild && ps[i] != xs[i]) {
			return false
		}
	}
	return true
}
