package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

type list[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

func TestAPI(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("Unauthenticated", func(t *testing.T) { testUnauthenticated(t, newAPI(t, b, 50)) })
		t.Run("Templates", func(t *testing.T) { testTemplates(t, newAPI(t, b, 50)) })
		t.Run("Create", func(t *testing.T) { testCreate(t, newAPI(t, b, 50)) })
		t.Run("CreateQueueFull", func(t *testing.T) { testQueueFull(t, newAPI(t, b, 2)) })
		t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, newAPI(t, b, 50)) })
		t.Run("Ownership", func(t *testing.T) { testOwnership(t, newAPI(t, b, 50)) })
		t.Run("List", func(t *testing.T) { testList(t, newAPI(t, b, 50)) })
		t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, newAPI(t, b, 50)) })
		t.Run("IfMatch", func(t *testing.T) { testIfMatch(t, newAPI(t, b, 50)) })
		t.Run("Wait", func(t *testing.T) { testWait(t, newAPI(t, b, 50)) })
		t.Run("EventsAfterDelete", func(t *testing.T) { testEventsAfterDelete(t, newAPI(t, b, 50)) })
		t.Run("Malformed", func(t *testing.T) { testMalformed(t, newAPI(t, b, 50)) })
		t.Run("TraceContext", func(t *testing.T) { testTraceContext(t, newAPI(t, b, 50)) })
	})
}

var routes = []struct{ method, path string }{
	{"GET", "/api/containers"}, {"POST", "/api/containers"}, {"GET", "/api/containers/x"},
	{"DELETE", "/api/containers/x"}, {"POST", "/api/containers/x/start"}, {"POST", "/api/containers/x/stop"},
	{"GET", "/api/containers/x/wait"}, {"GET", "/api/containers/x/events"}, {"GET", "/api/templates"},
	{"GET", "/api/templates/x"}, {"PUT", "/api/templates/x"}, {"DELETE", "/api/templates/x"},
}

func testUnauthenticated(t *testing.T, a *api) {
	for _, rt := range routes {
		for _, tok := range []string{"", "wrong-token"} {
			r := a.mustStatus(a.do(rt.method, rt.path, tok, `{}`, nil), http.StatusUnauthorized)
			if r.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: 401 without WWW-Authenticate", rt.method, rt.path)
			}
		}
	}
	a.mustStatus(a.do("GET", "/api/nothing", alice, "", nil), http.StatusNotFound)
	r := a.mustStatus(a.do("PATCH", "/api/containers", alice, "", nil), http.StatusMethodNotAllowed)
	if r.Header().Get("Allow") == "" {
		t.Error("405 without Allow")
	}
}

func testTemplates(t *testing.T, a *api) {
	cases := []struct {
		name, method, path, token, body string
		want                            int
		field                           string // a field the problem must name
	}{
		{"user may not write", "PUT", "/api/templates/t1", alice, `{"runtime":"docker","image":"x"}`, 403, ""},
		{"user may not delete", "DELETE", "/api/templates/busybox", bob, "", 403, ""},
		{"admin creates", "PUT", "/api/templates/t1", admin, `{"runtime":"docker","image":"x"}`, 201, ""},
		{"admin replaces", "PUT", "/api/templates/t1", admin, `{"runtime":"docker","image":"y"}`, 200, ""},
		{"image required", "PUT", "/api/templates/t2", admin, `{"runtime":"docker"}`, 422, "image"},
		{"runtime known", "PUT", "/api/templates/t2", admin, `{"runtime":"lxc","image":"x"}`, 422, "runtime"},
		{"runtime not enabled", "PUT", "/api/templates/t2", admin, `{"runtime":"kubernetes","image":"x"}`, 422, "runtime"},
		{"bind outside roots", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","volumes":[{"source":"/etc","target":"/x","type":"bind"}]}`, 422, "volumes[0].source"},
		{"bind climbing out", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","volumes":[{"source":"/srv/berth/../../etc","target":"/x","type":"bind"}]}`, 422, "volumes[0].source"},
		{"unknown variable", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","env":{"A":"$HOME"}}`, 422, "env.A"},
		{"bad memory", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","resources":{"memory":"lots"}}`, 422, "resources.memory"},
		{"bad pull policy", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","pull_policy":"Sometimes"}`, 422, "pull_policy"},
		{"bad name", "PUT", "/api/templates/Bad_Name", admin, `{"runtime":"docker","image":"x"}`, 422, "name"},
		{"name mismatch", "PUT", "/api/templates/t2", admin, `{"name":"t3","runtime":"docker","image":"x"}`, 400, "name"},
		{"unknown field", "PUT", "/api/templates/t2", admin, `{"runtime":"docker","image":"x","privileged":true}`, 400, "privileged"},
		{"user reads", "GET", "/api/templates/t1", alice, "", 200, ""},
		{"missing", "GET", "/api/templates/nope", alice, "", 404, ""},
		{"admin deletes", "DELETE", "/api/templates/t1", admin, "", 204, ""},
		{"deleted", "GET", "/api/templates/t1", alice, "", 404, ""},
		{"delete missing", "DELETE", "/api/templates/t1", admin, "", 404, ""},
	}
	for _, tc := range cases {
		r := a.do(tc.method, tc.path, tc.token, tc.body, nil)
		if r.Code != tc.want {
			t.Errorf("%s: status %d, want %d: %s", tc.name, r.Code, tc.want, r.Body)
			continue
		}
		if tc.field != "" && !problemNames(r, tc.field) {
			t.Errorf("%s: problem does not name field %q: %s", tc.name, tc.field, r.Body)
		}
	}
	ls := decode[list[container.Template]](t, a.mustStatus(a.do("GET", "/api/templates", bob, "", nil), 200))
	if len(ls.Items) != 1 || ls.Items[0].Name != "busybox" || ls.Items[0].PullPolicy != "IfNotPresent" {
		t.Fatalf("templates: %+v", ls.Items)
	}
}

func problemNames(r *resp, field string) bool {
	for _, f := range r.problem.Errors {
		if f.Field == field {
			return true
		}
	}
	return false
}

func testCreate(t *testing.T, a *api) {
	r := a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox","name":"web-1","env":{"GREETING":"hi"},"labels":{"app":"web"},"group":"run-7"}`, nil), 202)
	in := decode[container.Instance](t, r)
	if in.Status != fsm.Pending || in.Owner != "alice" || in.Name != "web-1" || in.Template != "busybox" || in.Group != "run-7" ||
		in.Runtime != "docker" || in.Image != "berth-test/busybox:1" || in.Version != 1 || in.Labels["app"] != "web" {
		t.Fatalf("created: %+v", in)
	}
	if r.Header().Get("Location") != "/api/containers/"+in.ID || r.Header().Get("ETag") != `"1"` {
		t.Fatalf("headers: %v", r.Header())
	}
	if strings.Contains(r.Body.String(), "GREETING") || strings.Contains(r.Body.String(), "spec") {
		t.Fatalf("the response shows the spec or env: %s", r.Body)
	}
	stored, err := a.store.GetInstance(context.Background(), in.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec := stored.Spec
	if spec.Env["GREETING"] != "hi" || spec.Env["HOME_DIR"] != "/srv/berth/workspaces/alice" || spec.Env["FIXED"] != "1" ||
		spec.Volumes[0].Source != "/srv/berth/alice" || spec.Labels["tier"] != "test" || spec.Labels["app"] != "web" {
		t.Fatalf("resolved spec: %+v", spec)
	}
	// Template edits never change an existing instance.
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, `{"runtime":"docker","image":"other:2"}`, nil), 200)
	again, _ := a.store.GetInstance(context.Background(), in.ID)
	if again.Spec.Image != "berth-test/busybox:1" || again.Image != "berth-test/busybox:1" {
		t.Fatalf("template edit changed the instance: %+v", again.Spec)
	}
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), 200)

	cases := []struct {
		name, body string
		want       int
		field      string
	}{
		{"default name", `{"template":"busybox"}`, 202, ""},
		{"unknown template", `{"template":"nope"}`, 422, "template"},
		{"template required", `{}`, 422, "template"},
		{"env not allowed", `{"template":"busybox","env":{"FIXED":"2"}}`, 422, "env.FIXED"},
		{"bad name", `{"template":"busybox","name":"Not A Name"}`, 422, "name"},
		{"reserved label", `{"template":"busybox","labels":{"berth.owner":"bob"}}`, 422, "labels.berth.owner"},
		{"bad label value", `{"template":"busybox","labels":{"a":"has space"}}`, 422, "labels.a"},
		{"bad group", `{"template":"busybox","group":"a/b"}`, 422, "group"},
		{"unknown field", `{"template":"busybox","image":"evil"}`, 400, "image"},
		{"wrong type", `{"template":"busybox","env":{"GREETING":1}}`, 400, ""},
	}
	for _, tc := range cases {
		r := a.do("POST", "/api/containers", alice, tc.body, nil)
		if r.Code != tc.want {
			t.Errorf("%s: status %d, want %d: %s", tc.name, r.Code, tc.want, r.Body)
			continue
		}
		if tc.field != "" && !problemNames(r, tc.field) {
			t.Errorf("%s: problem does not name %q: %s", tc.name, tc.field, r.Body)
		}
	}
}

func testQueueFull(t *testing.T, a *api) {
	first := a.create(alice, `{"template":"busybox"}`)
	a.create(bob, `{"template":"busybox"}`)
	r := a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`, nil), 429)
	if r.Header().Get("Retry-After") == "" || r.problem.RetryAfterSeconds <= 0 {
		t.Fatalf("429 without retry hints: %v %s", r.Header(), r.Body)
	}
	// Finishing a create frees a slot.
	a.drive(first.ID, fsm.Running)
	a.create(alice, `{"template":"busybox"}`)
	// Lifecycle requests are never limited.
	a.mustStatus(a.do("POST", "/api/containers/"+first.ID+"/stop", alice, "", nil), 202)
}

func testIdempotency(t *testing.T, a *api) {
	key := map[string]string{"Idempotency-Key": "k-1"}
	r1 := a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox","labels":{"a":"1","b":"2"}}`, key), 202)
	in1 := decode[container.Instance](t, r1)
	// Same body (other key order): same response, same id.
	r2 := a.mustStatus(a.do("POST", "/api/containers", alice, `{"labels":{"b":"2","a":"1"},"template":"busybox"}`, key), 202)
	in2 := decode[container.Instance](t, r2)
	if in1.ID != in2.ID || r2.Header().Get("Idempotent-Replayed") != "true" || r2.Header().Get("Location") != r1.Header().Get("Location") {
		t.Fatalf("repeat: %s vs %s, headers %v", in1.ID, in2.ID, r2.Header())
	}
	// Another body with the same key: 422.
	a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`, key), 422)
	// The same key for another user is another request.
	in3 := a.create(bob, `{"template":"busybox"}`)
	r4 := a.mustStatus(a.do("POST", "/api/containers", bob, `{"template":"busybox","labels":{"a":"1","b":"2"}}`, key), 202)
	if in4 := decode[container.Instance](t, r4); in4.ID == in1.ID || in4.ID == in3.ID {
		t.Fatal("another user's key replayed alice's response")
	}
	a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 65)}), 400)
	page := decode[list[container.Instance]](t, a.mustStatus(a.do("GET", "/api/containers", alice, "", nil), 200))
	if len(page.Items) != 1 {
		t.Fatalf("alice has %d containers, want 1", len(page.Items))
	}
}

func testOwnership(t *testing.T, a *api) {
	in := a.create(alice, `{"template":"busybox"}`)
	p := "/api/containers/" + in.ID
	for _, rt := range []struct{ method, path string }{
		{"GET", p}, {"DELETE", p}, {"POST", p + "/start"}, {"POST", p + "/stop"},
		{"GET", p + "/wait?status=running&timeout=1s"}, {"GET", p + "/events"},
	} {
		a.mustStatus(a.do(rt.method, rt.path, bob, "", nil), 404)
	}
	a.mustStatus(a.do("GET", p, admin, "", nil), 200)
	a.mustStatus(a.do("GET", p+"/events", admin, "", nil), 200)
	a.mustStatus(a.do("GET", p, alice, "", nil), 200)
	got, _ := a.store.GetInstance(context.Background(), in.ID)
	if got.Status != fsm.Pending || got.Version != 1 {
		t.Fatalf("bob's requests changed alice's container: %+v", got)
	}
}

func testList(t *testing.T, a *api) {
	var mine []string
	for i := 0; i < 5; i++ {
		mine = append(mine, a.create(alice, fmt.Sprintf(`{"template":"busybox","group":"g%d","labels":{"n":"%d"}}`, i%2, i)).ID)
	}
	a.create(bob, `{"template":"busybox"}`)
	a.drive(mine[0], fsm.Running)
	get := func(tok, q string) list[container.Instance] {
		return decode[list[container.Instance]](t, a.mustStatus(a.do("GET", "/api/containers"+q, tok, "", nil), 200))
	}
	if got := get(alice, ""); len(got.Items) != 5 || got.NextCursor != "" {
		t.Fatalf("alice sees %d", len(got.Items))
	}
	if got := get(bob, ""); len(got.Items) != 1 {
		t.Fatalf("bob sees %d", len(got.Items))
	}
	if got := get(admin, "?limit=100"); len(got.Items) != 6 {
		t.Fatalf("admin sees %d", len(got.Items))
	}
	if got := get(admin, "?owner=bob"); len(got.Items) != 1 || got.Items[0].Owner != "bob" {
		t.Fatalf("admin owner=bob: %+v", got.Items)
	}
	if got := get(alice, "?status=running"); len(got.Items) != 1 || got.Items[0].ID != mine[0] {
		t.Fatalf("status filter: %+v", got.Items)
	}
	if got := get(alice, "?status=running&status=pending"); len(got.Items) != 5 {
		t.Fatalf("repeated status: %d", len(got.Items))
	}
	if got := get(alice, "?group=g1"); len(got.Items) != 2 {
		t.Fatalf("group filter: %d", len(got.Items))
	}
	if got := get(alice, "?label=n=3"); len(got.Items) != 1 || got.Items[0].ID != mine[3] {
		t.Fatalf("label filter: %+v", got.Items)
	}
	if got := get(alice, "?template=other"); len(got.Items) != 0 || got.Items == nil {
		t.Fatalf("template filter: %+v", got.Items)
	}
	// Pagination.
	var seen []string
	q := "?limit=2"
	for i := 0; ; i++ {
		page := get(alice, q)
		for _, it := range page.Items {
			seen = append(seen, it.ID)
		}
		if page.NextCursor == "" {
			break
		}
		if i == 0 {
			a.mustStatus(a.do("GET", "/api/containers?limit=2&cursor="+page.NextCursor, bob, "", nil), 400)
			a.mustStatus(a.do("GET", "/api/containers?limit=2&status=running&cursor="+page.NextCursor, alice, "", nil), 400)
		}
		q = "?limit=2&cursor=" + page.NextCursor
	}
	if strings.Join(seen, ",") != strings.Join(mine, ",") {
		t.Fatalf("paged %v, want %v", seen, mine)
	}
	for _, bad := range []string{"?status=exited", "?limit=0", "?limit=101", "?limit=x", "?cursor=garbage", "?owner=bob", "?label=novalue"} {
		r := a.mustStatus(a.do("GET", "/api/containers"+bad, alice, "", nil), 400)
		if len(r.problem.Errors) == 0 {
			t.Errorf("%s: 400 without field errors", bad)
		}
	}
}

func testLifecycle(t *testing.T, a *api) {
	in := a.create(alice, `{"template":"busybox"}`)
	p := "/api/containers/" + in.ID
	// Pending: stop and start are not allowed by the FSM.
	r := a.mustStatus(a.do("POST", p+"/stop", alice, "", nil), 409)
	if r.problem.CurrentStatus != fsm.Pending {
		t.Fatalf("409 without current_status: %s", r.Body)
	}
	a.mustStatus(a.do("POST", p+"/start", alice, "", nil), 409)
	a.drive(in.ID, fsm.Running)
	got := decode[container.Instance](t, a.mustStatus(a.do("POST", p+"/stop", alice, "", nil), 202))
	if got.Status != fsm.StopPending {
		t.Fatalf("after stop: %s", got.Status)
	}
	// A repeated stop while stopping enqueues nothing.
	a.mustStatus(a.do("POST", p+"/stop", alice, "", nil), 200)
	a.drive(in.ID, fsm.Stopped)
	stopped := decode[container.Instance](t, a.mustStatus(a.do("GET", p, alice, "", nil), 200))
	if stopped.Status != fsm.Stopped || stopped.ExitCode == nil || *stopped.ExitCode != 137 || stopped.FinishedAt == nil {
		t.Fatalf("stopped on request: %+v", stopped)
	}
	// Stop of a terminal container: 200, unchanged.
	same := decode[container.Instance](t, a.mustStatus(a.do("POST", p+"/stop", alice, "", nil), 200))
	if same.Version != stopped.Version {
		t.Fatal("stop of a stopped container changed it")
	}
	started := decode[container.Instance](t, a.mustStatus(a.do("POST", p+"/start", alice, "", nil), 202))
	if started.Status != fsm.StartPending {
		t.Fatalf("after start: %s", started.Status)
	}
	// start_pending → delete_pending is not an allowed transition.
	a.mustStatus(a.do("DELETE", p, alice, "", nil), 409)
	a.drive(in.ID, fsm.Starting)
	a.drive(in.ID, fsm.Running)
	del := decode[container.Instance](t, a.mustStatus(a.do("DELETE", p, alice, "", nil), 202))
	if del.Status != fsm.DeletePending {
		t.Fatalf("after delete: %s", del.Status)
	}
	again := decode[container.Instance](t, a.mustStatus(a.do("DELETE", p, alice, "", nil), 202))
	if again.Version != del.Version {
		t.Fatal("a repeated delete enqueued again")
	}
	a.mustStatus(a.do("POST", p+"/start", alice, "", nil), 409)
	evs := decode[list[container.Event]](t, a.mustStatus(a.do("GET", p+"/events", alice, "", nil), 200))
	var deletes int
	for _, e := range evs.Items {
		if e.Type == container.EventDeleteRequested {
			deletes++
		}
	}
	if deletes != 1 {
		t.Fatalf("%d delete requests recorded, want 1", deletes)
	}
	a.mustStatus(a.do("POST", "/api/containers/nope/start", alice, "", nil), 404)
}

func testIfMatch(t *testing.T, a *api) {
	in := a.create(alice, `{"template":"busybox"}`)
	in = a.drive(in.ID, fsm.Running)
	p := "/api/containers/" + in.ID
	a.mustStatus(a.do("POST", p+"/stop", alice, "", map[string]string{"If-Match": `"1"`}), 412)
	a.mustStatus(a.do("POST", p+"/stop", alice, "", map[string]string{"If-Match": "abc"}), 400)
	r := a.mustStatus(a.do("GET", p, alice, "", nil), 200)
	a.mustStatus(a.do("POST", p+"/stop", alice, "", map[string]string{"If-Match": r.Header().Get("ETag")}), 202)
}

func testWait(t *testing.T, a *api) {
	in := a.create(alice, `{"template":"busybox"}`)
	p := "/api/containers/" + in.ID + "/wait"
	a.mustStatus(a.do("GET", p+"?status=pending", alice, "", nil), 200)
	a.mustStatus(a.do("GET", p+"?status=running&timeout=50ms", alice, "", nil), 408)
	done := make(chan *resp)
	go func() { done <- a.do("GET", p+"?status=running&timeout=10s", alice, "", nil) }()
	a.drive(in.ID, fsm.Running)
	if r := <-done; r.Code != 200 || decode[container.Instance](t, r).Status != fsm.Running {
		t.Fatalf("wait for running: %d %s", r.Code, r.Body)
	}
	a.mustStatus(a.do("POST", "/api/containers/"+in.ID+"/stop", alice, "", nil), 202)
	a.drive(in.ID, fsm.Stopped)
	r := a.mustStatus(a.do("GET", p+"?status=running&timeout=5s", alice, "", nil), 409)
	if r.problem.CurrentStatus != fsm.Stopped {
		t.Fatalf("409 without current_status: %s", r.Body)
	}
	for _, bad := range []string{"", "?status=exited", "?status=running&timeout=30s", "?status=running&timeout=x"} {
		a.mustStatus(a.do("GET", p+bad, alice, "", nil), 400)
	}
}

func testEventsAfterDelete(t *testing.T, a *api) {
	in := a.create(alice, `{"template":"busybox"}`)
	p := "/api/containers/" + in.ID
	a.mustStatus(a.do("DELETE", p, alice, "", nil), 202)
	inst := a.drive(in.ID, fsm.Deleting)
	if err := a.store.DeleteInstance(context.Background(), store.DeleteParams{ID: in.ID, ExpectVersion: inst.Version,
		Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, Actor: container.ActorSystem}}); err != nil {
		t.Fatal(err)
	}
	a.mustStatus(a.do("GET", p, alice, "", nil), 404)
	evs := decode[list[container.Event]](t, a.mustStatus(a.do("GET", p+"/events?limit=2", alice, "", nil), 200))
	if len(evs.Items) != 2 || evs.NextCursor == "" || evs.Items[0].Type != container.EventCreateRequested || evs.Items[0].Actor != "alice" {
		t.Fatalf("events after delete: %+v", evs)
	}
	rest := decode[list[container.Event]](t, a.mustStatus(a.do("GET", p+"/events?limit=100&cursor="+evs.NextCursor, alice, "", nil), 200))
	if last := rest.Items[len(rest.Items)-1]; last.Type != container.EventDeleted {
		t.Fatalf("last event %+v", last)
	}
	a.mustStatus(a.do("GET", p+"/events", bob, "", nil), 404)
	a.mustStatus(a.do("GET", p+"/events?cursor="+evs.NextCursor, bob, "", nil), 400)
	a.mustStatus(a.do("GET", p+"/events", admin, "", nil), 200)
	a.mustStatus(a.do("GET", "/api/containers/never/events", alice, "", nil), 404)
}

func testMalformed(t *testing.T, a *api) {
	cases := []struct {
		name, body string
		want       int
	}{
		{"empty", "", 400},
		{"not json", "template=busybox", 400},
		{"truncated", `{"template":"busy`, 400},
		{"array", `[]`, 400},
		{"two objects", `{"template":"busybox"}{}`, 400},
		{"too large", `{"template":"busybox","name":"` + strings.Repeat("a", 70<<10) + `"}`, 413},
	}
	for _, tc := range cases {
		if r := a.do("POST", "/api/containers", alice, tc.body, nil); r.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, r.Code, tc.want, r.Body)
		}
	}
}

// testTraceContext: the caller's trace context rides on the outbox items,
// so a trace spans the request and the background work it starts.
func testTraceContext(t *testing.T, a *api) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	in := decode[container.Instance](t, a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`,
		map[string]string{"traceparent": tp}), http.StatusAccepted))
	items, err := a.store.ListUndispatched(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range items {
		if it.InstanceID == in.ID {
			found = it.TraceContext == tp
		}
	}
	if !found {
		t.Fatalf("the create's outbox item does not carry the trace context: %+v", items)
	}
	// A malformed header is not carried on.
	in = decode[container.Instance](t, a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`,
		map[string]string{"traceparent": "bad value with spaces"}), http.StatusAccepted))
	items, _ = a.store.ListUndispatched(context.Background(), time.Now().Add(time.Hour), 100)
	for _, it := range items {
		if it.InstanceID == in.ID && it.TraceContext != "" {
			t.Fatalf("a malformed trace header was kept: %q", it.TraceContext)
		}
	}
}
