package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
	"github.com/berth-io/berth/internal/fsm"
)

func newClient(t *testing.T, base, token string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithRetry(3, time.Millisecond)}, opts...)
	c, err := client.New(base, token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apiError(t *testing.T, err error, status int) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *client.Error with status %d", err, err, status)
	}
	if e.Status != status || e.Problem.Status != status || e.Problem.Title == "" {
		t.Fatalf("error %d %+v, want status %d with a problem", e.Status, e.Problem, status)
	}
	return e
}

func TestContainerLifecycle(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	ctx := context.Background()
	alice := newClient(t, srv.URL, clienttest.AliceToken)

	in, err := alice.CreateContainer(ctx, client.CreateRequest{Template: "busybox", Name: "web-1",
		Env: map[string]string{"GREETING": "hi"}, Labels: map[string]string{"app": "web"}, Group: "g1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if in.ID == "" || in.Status != fsm.Pending || in.Owner != "alice" || in.Name != "web-1" || in.Labels["app"] != "web" || in.Version < 1 {
		t.Fatalf("created %+v", in)
	}
	got, err := alice.GetContainer(ctx, in.ID)
	if err != nil || got.ID != in.ID || got.Group != "g1" || got.Image != "berth-test/busybox:1" {
		t.Fatalf("get: %+v, %v", got, err)
	}

	page, err := alice.ListContainers(ctx, client.ListOptions{Status: []string{"pending"}, Template: "busybox",
		Group: "g1", Labels: map[string]string{"app": "web"}})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != in.ID || page.NextCursor != "" {
		t.Fatalf("list: %+v, %v", page, err)
	}
	page, err = alice.ListContainers(ctx, client.ListOptions{Status: []string{"running"}})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("list running: %+v, %v", page, err)
	}

	// A pending container cannot be stopped: 409 with the current status.
	_, err = alice.StopContainer(ctx, in.ID, "")
	e := apiError(t, err, http.StatusConflict)
	if !client.IsConflict(err) || e.Problem.CurrentStatus != "pending" {
		t.Fatalf("stop pending: %+v", e.Problem)
	}

	running := srv.Drive(t, in.ID, fsm.Running)
	// A stale If-Match is refused.
	_, err = alice.StopContainer(ctx, in.ID, "1")
	apiError(t, err, http.StatusPreconditionFailed)
	stopped, err := alice.StopContainer(ctx, in.ID, `"`+itoa(running.Version)+`"`)
	if err != nil || stopped.Status != fsm.StopPending {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	srv.Drive(t, in.ID, fsm.Stopped)
	// Stop of a stopped container: 200, unchanged.
	if again, err := alice.StopContainer(ctx, in.ID, ""); err != nil || again.Status != fsm.Stopped {
		t.Fatalf("stop again: %+v, %v", again, err)
	}
	started, err := alice.StartContainer(ctx, in.ID, "")
	if err != nil || started.Status != fsm.StartPending {
		t.Fatalf("start: %+v, %v", started, err)
	}
	srv.Drive(t, in.ID, fsm.Starting)
	srv.Drive(t, in.ID, fsm.Running)

	deleted, err := alice.DeleteContainer(ctx, in.ID, "")
	if err != nil || deleted.Status != fsm.DeletePending {
		t.Fatalf("delete: %+v, %v", deleted, err)
	}

	ev, err := alice.Events(ctx, in.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range ev.Items {
		if e.Seq != int64(i+1) || e.InstanceID != in.ID {
			t.Fatalf("event %d: %+v", i, e)
		}
		types = append(types, e.Type)
	}
	if types[0] != "ContainerCreateRequested" || !slices.Contains(types, "ContainerStopRequested") ||
		types[len(types)-1] != "ContainerDeleteRequested" {
		t.Fatalf("event types %v", types)
	}
	// Events page too.
	p1, err := alice.Events(ctx, in.ID, "", 2)
	if err != nil || len(p1.Items) != 2 || p1.NextCursor == "" {
		t.Fatalf("events page 1: %+v, %v", p1, err)
	}
	p2, err := alice.Events(ctx, in.ID, p1.NextCursor, 2)
	if err != nil || len(p2.Items) == 0 || p2.Items[0].Seq != 3 {
		t.Fatalf("events page 2: %+v, %v", p2, err)
	}
}

func TestOwnershipAndAuth(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	ctx := context.Background()
	in, err := newClient(t, srv.URL, clienttest.AliceToken).CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Another user's container is a 404.
	_, err = newClient(t, srv.URL, clienttest.BobToken).GetContainer(ctx, in.ID)
	apiError(t, err, http.StatusNotFound)
	if !client.IsNotFound(err) {
		t.Fatal("IsNotFound")
	}
	// No token, a wrong token: 401.
	_, err = newClient(t, srv.URL, "").GetContainer(ctx, in.ID)
	apiError(t, err, http.StatusUnauthorized)
	_, err = newClient(t, srv.URL, "nope").ListTemplates(ctx)
	apiError(t, err, http.StatusUnauthorized)
	// The admin sees it, and may list by owner.
	admin := newClient(t, srv.URL, clienttest.AdminToken)
	all, err := admin.ListAllContainers(ctx, client.ListOptions{Owner: "alice"})
	if err != nil || len(all) != 1 || all[0].ID != in.ID {
		t.Fatalf("admin list: %+v, %v", all, err)
	}
	// A user may not filter by owner: 400 with a field error.
	_, err = newClient(t, srv.URL, clienttest.BobToken).ListContainers(ctx, client.ListOptions{Owner: "alice"})
	e := apiError(t, err, http.StatusBadRequest)
	if len(e.Problem.Errors) != 1 || e.Problem.Errors[0].Field != "owner" {
		t.Fatalf("problem %+v", e.Problem)
	}
}

func TestValidationProblem(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	_, err := newClient(t, srv.URL, clienttest.AliceToken).CreateContainer(context.Background(),
		client.CreateRequest{Template: "busybox", Env: map[string]string{"NOT_ALLOWED": "x"}}, "")
	e := apiError(t, err, http.StatusUnprocessableEntity)
	if len(e.Problem.Errors) == 0 || e.Problem.Errors[0].Field != "env.NOT_ALLOWED" {
		t.Fatalf("problem %+v", e.Problem)
	}
	if msg := err.Error(); !strings.Contains(msg, "422") || !strings.Contains(msg, "env.NOT_ALLOWED") {
		t.Fatalf("message %q", msg)
	}
}

func TestIdempotencyKey(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	ctx := context.Background()
	c := newClient(t, srv.URL, clienttest.AliceToken)
	req := client.CreateRequest{Template: "busybox", Name: "once"}
	a, err := c.CreateContainer(ctx, req, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateContainer(ctx, req, "key-1")
	if err != nil || b.ID != a.ID {
		t.Fatalf("replay: %s vs %s, %v", b.ID, a.ID, err)
	}
	// Same key, another body: 422.
	_, err = c.CreateContainer(ctx, client.CreateRequest{Template: "busybox", Name: "other"}, "key-1")
	apiError(t, err, http.StatusUnprocessableEntity)
	// Without a key each call makes its own (generated) one.
	x, err1 := c.CreateContainer(ctx, req, "")
	y, err2 := c.CreateContainer(ctx, req, "")
	if err1 != nil || err2 != nil || x.ID == y.ID {
		t.Fatalf("generated keys: %s %s %v %v", x.ID, y.ID, err1, err2)
	}
}

func TestPagination(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	ctx := context.Background()
	c := newClient(t, srv.URL, clienttest.AliceToken)
	var ids []string
	for range 5 {
		in, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	page, err := c.ListContainers(ctx, client.ListOptions{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("page: %+v, %v", page, err)
	}
	all, err := c.ListAllContainers(ctx, client.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range all {
		got = append(got, in.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("all pages: %v, want %v", got, ids)
	}
	// A cursor of another listing is refused.
	_, err = c.ListContainers(ctx, client.ListOptions{Limit: 2, Template: "other", Cursor: page.NextCursor})
	apiError(t, err, http.StatusBadRequest)
}

func TestWaitLoopsPastTheServerMaximum(t *testing.T) {
	// The server waits at most 100ms per request; the client asks 5s and
	// must keep asking until the container runs, ~400ms in.
	srv := clienttest.New(t, clienttest.Options{WaitMax: 100 * time.Millisecond})
	ctx := context.Background()
	c := newClient(t, srv.URL, clienttest.AliceToken, client.WithWaitMax(100*time.Millisecond))
	in, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(400 * time.Millisecond)
		srv.Drive(t, in.ID, fsm.Running)
	})
	before := srv.Requests.Load()
	got, err := c.Wait(ctx, in.ID, "running", 5*time.Second)
	wg.Wait()
	if err != nil || got.Status != fsm.Running || got.RuntimeNodeName != "node-1" {
		t.Fatalf("wait: %+v, %v", got, err)
	}
	if n := srv.Requests.Load() - before; n < 2 {
		t.Fatalf("wait made %d requests, want several", n)
	}
}

func TestWaitTimeoutAndUnreachable(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{WaitMax: 100 * time.Millisecond})
	ctx := context.Background()
	c := newClient(t, srv.URL, clienttest.AliceToken, client.WithWaitMax(100*time.Millisecond))
	in, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Wait(ctx, in.ID, "running", 250*time.Millisecond)
	e := apiError(t, err, http.StatusRequestTimeout)
	if !client.IsTimeout(err) || !strings.Contains(e.Problem.Detail, "gave up after 250ms") || !strings.Contains(e.Problem.Detail, "pending") {
		t.Fatalf("timeout: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("waited %s for a 250ms timeout", d)
	}

	srv.Drive(t, in.ID, fsm.Failed)
	_, err = c.Wait(ctx, in.ID, "running", time.Second)
	e = apiError(t, err, http.StatusConflict)
	if e.Problem.CurrentStatus != "failed" {
		t.Fatalf("unreachable: %+v", e.Problem)
	}
	if _, err := c.Wait(ctx, in.ID, "running", 0); err == nil {
		t.Fatal("a zero timeout was accepted")
	}
}

func TestTemplates(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{NoTemplate: true})
	ctx := context.Background()
	admin := newClient(t, srv.URL, clienttest.AdminToken)
	alice := newClient(t, srv.URL, clienttest.AliceToken)

	tpl, created, err := admin.PutTemplate(ctx, "box", json.RawMessage(clienttest.BusyboxTemplate))
	if err != nil || !created || tpl.Name != "box" || tpl.Version != 1 {
		t.Fatalf("put: %+v %v %v", tpl, created, err)
	}
	tpl.Description = "updated"
	tpl2, created, err := admin.PutTemplate(ctx, "box", tpl)
	if err != nil || created || tpl2.Description != "updated" || tpl2.Version != 2 {
		t.Fatalf("replace: %+v %v %v", tpl2, created, err)
	}
	got, err := alice.GetTemplate(ctx, "box")
	if err != nil || got.Image != "berth-test/busybox:1" {
		t.Fatalf("get: %+v %v", got, err)
	}
	list, err := alice.ListTemplates(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "box" {
		t.Fatalf("list: %+v %v", list, err)
	}
	// Writes are for admins.
	_, _, err = alice.PutTemplate(ctx, "box", tpl)
	apiError(t, err, http.StatusForbidden)
	err = alice.DeleteTemplate(ctx, "box")
	apiError(t, err, http.StatusForbidden)
	// Validation: 422 with field errors; unknown fields 400.
	_, _, err = admin.PutTemplate(ctx, "bad", json.RawMessage(`{"runtime":"docker"}`))
	e := apiError(t, err, http.StatusUnprocessableEntity)
	if len(e.Problem.Errors) == 0 {
		t.Fatalf("problem %+v", e.Problem)
	}
	_, _, err = admin.PutTemplate(ctx, "bad", json.RawMessage(`{"image":"x","bogus":1}`))
	apiError(t, err, http.StatusBadRequest)
	if _, _, err = admin.PutTemplate(ctx, "bad", json.RawMessage(`{nope`)); err == nil || client.StatusCode(err) != 0 {
		t.Fatalf("invalid JSON was sent: %v", err)
	}

	if err := admin.DeleteTemplate(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	_, err = alice.GetTemplate(ctx, "box")
	apiError(t, err, http.StatusNotFound)
}

func TestQueueFullRetriesWithTheSameKey(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/api/containers" {
				mu.Lock()
				keys = append(keys, r.Header.Get("Idempotency-Key"))
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := clienttest.New(t, clienttest.Options{MaxPending: 1, Wrap: record})
	ctx := context.Background()
	c := newClient(t, srv.URL, clienttest.AliceToken, client.WithRetry(2, time.Millisecond))
	if _, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, ""); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
	e := apiError(t, err, http.StatusTooManyRequests)
	if e.Attempts != 3 || e.RetryAfter != 2*time.Second || e.Problem.RetryAfterSeconds != 2 {
		t.Fatalf("429: attempts %d, retry after %s, %+v", e.Attempts, e.RetryAfter, e.Problem)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("message %q", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 4 || keys[0] == keys[1] || keys[1] != keys[2] || keys[2] != keys[3] || keys[1] == "" {
		t.Fatalf("idempotency keys %q: want one fresh key per create, repeated on its retries", keys)
	}
}

func TestUnavailableIsRetried(t *testing.T) {
	isGet := func(r *http.Request) bool { return r.Method == http.MethodGet }
	srv := clienttest.New(t, clienttest.Options{Wrap: clienttest.FailFirst(2, http.StatusServiceUnavailable, "1", isGet)})
	c := newClient(t, srv.URL, clienttest.AliceToken)
	before := srv.Requests.Load()
	list, err := c.ListTemplates(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("list after two 503s: %+v, %v", list, err)
	}
	if n := srv.Requests.Load() - before; n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}

	// With retries off, the first 503 is the answer.
	srv = clienttest.New(t, clienttest.Options{Wrap: clienttest.FailFirst(1, http.StatusServiceUnavailable, "", isGet)})
	c = newClient(t, srv.URL, clienttest.AliceToken, client.WithRetry(0, 0))
	_, err = c.ListTemplates(context.Background())
	if e := apiError(t, err, http.StatusServiceUnavailable); e.Attempts != 1 {
		t.Fatalf("attempts %d", e.Attempts)
	}
}

func TestPathPrefixAndHeaders(t *testing.T) {
	var (
		mu      sync.Mutex
		headers []http.Header
	)
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			headers = append(headers, r.Header.Clone())
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	srv := clienttest.New(t, clienttest.Options{Prefix: "/prod", Wrap: record})
	ctx := context.Background()
	for _, base := range []string{srv.URL, srv.URL + "/"} {
		c := newClient(t, base, clienttest.AliceToken, client.WithUserAgent("berth-cli/test"))
		in, err := c.CreateContainer(ctx, client.CreateRequest{Template: "busybox"}, "")
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if _, err := c.GetContainer(ctx, in.ID); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
	mu.Lock()
	h := headers[0]
	mu.Unlock()
	if h.Get("Authorization") != "Bearer "+clienttest.AliceToken || h.Get("User-Agent") != "berth-cli/test" ||
		h.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", h)
	}
	// Without the prefix the server has no such route.
	_, err := newClient(t, strings.TrimSuffix(srv.URL, "/prod"), clienttest.AliceToken).ListTemplates(ctx)
	apiError(t, err, http.StatusNotFound)
}

func TestGatewayErrorWithoutProblem(t *testing.T) {
	// API Gateway answers some errors itself, in its own JSON.
	gateway := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Apigw-Requestid", "gw-123")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"Forbidden"}`))
		})
	}
	srv := clienttest.New(t, clienttest.Options{Wrap: gateway, NoTemplate: true})
	_, err := newClient(t, srv.URL, "x").ListTemplates(context.Background())
	e := apiError(t, err, http.StatusForbidden)
	if e.Problem.Title != "Forbidden" || e.Problem.Detail != "Forbidden" || e.RequestID != "gw-123" {
		t.Fatalf("%+v", e)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://", "http://x/?a=b", "http://u:p@x"} {
		if _, err := client.New(u, ""); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, err := client.New("https://abc.example.com/prod/", "")
	if err != nil || c.BaseURL() != "https://abc.example.com/prod" {
		t.Fatalf("%v %v", c, err)
	}
}

func TestUnreachableServer(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", "")
	_, err := c.ListTemplates(context.Background())
	if err == nil || client.StatusCode(err) != 0 || !strings.Contains(err.Error(), "GET http://127.0.0.1:1/api/templates") {
		t.Fatalf("%v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
