package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// Tokens of the three callers every test uses.
const (
	admin = "tok-admin"
	alice = "tok-alice"
	bob   = "tok-bob"
)

type api struct {
	t *testing.T
	// h is the handler wrapped in the OpenAPI document's validator: every
	// exchange of every test is checked against docs/openapi.yaml.
	h     http.Handler
	m     *manager.Manager
	store store.Store
}

func newAPI(t *testing.T, b teststores.Backend, maxPending int) *api {
	t.Helper()
	return newAPIWith(t, b, maxPending, nil)
}

// newAPIWith is newAPI with the handler's options adjusted by opt (nil:
// as newAPI).
func newAPIWith(t *testing.T, b teststores.Backend, maxPending int, opt func(*httpapi.Options)) *api {
	t.Helper()
	return newAPIGroups(t, b, maxPending, manager.GroupPolicies{}, opt)
}

// newAPIGroups is newAPIWith with group cleanup policies.
func newAPIGroups(t *testing.T, b teststores.Backend, maxPending int, groups manager.GroupPolicies, opt func(*httpapi.Options)) *api {
	t.Helper()
	return newAPIManager(t, b, func(o *manager.Options) { o.MaxPending, o.Groups = maxPending, groups }, opt)
}

// newAPIManager is newAPIWith with the manager's options adjusted by
// mopt too (after newAPI's: a store, the docker runtime, /srv/berth).
func newAPIManager(t *testing.T, b teststores.Backend, mopt func(*manager.Options), opt func(*httpapi.Options)) *api {
	t.Helper()
	s := b.Open(t, time.Now)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mo := manager.Options{Store: s, MaxPending: 50, Runtimes: []string{"docker"},
		BindRoots: []string{"/srv/berth"}, Logger: logger, WaitPoll: 5 * time.Millisecond}
	if mopt != nil {
		mopt(&mo)
	}
	m := manager.New(mo)
	o := httpapi.Options{Manager: m, Logger: logger, WaitMax: 25 * time.Second,
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: admin, User: "root", Admin: true},
			{Token: alice, User: "alice"},
			{Token: bob, User: "bob"},
		})}
	if opt != nil {
		opt(&o)
	}
	h := httpapi.New(o)
	a := &api{t: t, h: apicontract.Handler(t, h), m: m, store: s}
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusCreated)
	return a
}

const busyboxTemplate = `{"runtime":"docker","image":"berth-test/busybox:1","command":["sleep","3600"],
 "env":{"HOME_DIR":"$WORKSPACE_PATH","FIXED":"1"},"user_env":["GREETING"],
 "volumes":[{"source":"/srv/berth/$USERID","target":"/data","type":"bind"}],
 "resources":{"cpu":"0.5","memory":"64Mi"},"labels":{"tier":"test"}}`

type resp struct {
	*httptest.ResponseRecorder
	problem httpapi.Problem
}

func (a *api) do(method, path, token, body string, headers map[string]string) *resp {
	a.t.Helper()
	var rdr io.Reader
	if body != "" {
		rdr = bytes.NewBufferString(body)
	}
	req := httptest.NewRequest(method, path, rdr)
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // as every client sends it; a test may override
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	r := &resp{ResponseRecorder: rec}
	if rec.Code >= 400 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			a.t.Fatalf("%s %s: error %d with Content-Type %q, want application/problem+json: %s", method, path, rec.Code, ct, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &r.problem); err != nil || r.problem.Status != rec.Code || r.problem.Title == "" || r.problem.Type == "" {
			a.t.Fatalf("%s %s: bad problem document (%v): %s", method, path, err, rec.Body)
		}
	}
	return r
}

func (a *api) mustStatus(r *resp, want int) *resp {
	a.t.Helper()
	if r.Code != want {
		a.t.Fatalf("status %d, want %d: %s", r.Code, want, r.Body)
	}
	return r
}

func decode[T any](t *testing.T, r *resp) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		t.Fatalf("decoding %T: %v: %s", v, err, r.Body)
	}
	return v
}

func (a *api) create(token, body string) container.Instance {
	a.t.Helper()
	return decode[container.Instance](a.t, a.mustStatus(a.do("POST", "/api/containers", token, body, nil), http.StatusAccepted))
}

// drive moves an instance the way the workers and runtime will: through
// the store for worker steps and OnEvent for runtime observations.
func (a *api) drive(id string, to fsm.Status) container.Instance {
	a.t.Helper()
	ctx := context.Background()
	inst, err := a.store.GetInstance(ctx, id)
	if err != nil {
		a.t.Fatal(err)
	}
	switch to {
	case fsm.Running:
		if inst.Status == fsm.Pending {
			inst = a.transition(inst, fsm.Creating)
		}
		if _, err := a.m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedStarted, NodeName: "local"}); err != nil {
			a.t.Fatal(err)
		}
	case fsm.Stopped:
		if inst.Status == fsm.StopPending {
			inst = a.transition(inst, fsm.Stopping)
		}
		code := 137
		if _, err := a.m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedExited, ExitCode: &code}); err != nil {
			a.t.Fatal(err)
		}
	default:
		a.transition(inst, to)
	}
	inst, err = a.store.GetInstance(ctx, id)
	if err != nil || inst.Status != to {
		a.t.Fatalf("drive %s to %s: got %s, %v", id, to, inst.Status, err)
	}
	return inst
}

func (a *api) transition(inst container.Instance, to fsm.Status) container.Instance {
	a.t.Helper()
	out, err := a.store.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
		From: inst.Status, To: to, Event: &container.Event{Type: "Test", From: inst.Status, To: to, At: time.Now(), Actor: container.ActorSystem}})
	if err != nil {
		a.t.Fatalf("transition %s → %s: %v", inst.Status, to, err)
	}
	return out
}
