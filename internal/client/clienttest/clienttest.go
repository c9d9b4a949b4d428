// Package clienttest serves the real berth API for tests of its clients:
// internal/httpapi's handler around a real manager on an embedded bbolt
// store, with token auth for an admin and two users, every exchange checked
// against docs/openapi.yaml. Faults (429, 503, a
// gateway's own errors) are injected by wrapping that handler, never by
// replacing it.
package clienttest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// The tokens of the three callers.
const (
	AdminToken = "tok-admin" // user "root", an admin
	AliceToken = "tok-alice" // user "alice"
	BobToken   = "tok-bob"   // user "bob"
)

// BusyboxTemplate is a valid template body (without its name).
const BusyboxTemplate = `{"runtime":"docker","image":"berth-test/busybox:1","command":["sleep","3600"],
 "env":{"HOME_DIR":"$WORKSPACE_PATH","FIXED":"1"},"user_env":["GREETING"],
 "volumes":[{"source":"/srv/berth/$USERID","target":"/data","type":"bind"}],
 "resources":{"cpu":"0.5","memory":"64Mi"},"labels":{"tier":"test"}}`

// Options shape the server.
type Options struct {
	// MaxPending is the create admission limit (default 100).
	MaxPending int
	// WaitMax caps GET /wait (default 25 s, as deployed).
	WaitMax time.Duration
	// RetryAfter is what 429 and 503 answers ask for (default 2 s).
	RetryAfter time.Duration
	// Prefix serves the API below a path, as an API Gateway stage does ("/prod").
	Prefix string
	// Wrap, if set, wraps the real handler (fault injection).
	Wrap func(http.Handler) http.Handler
	// NoTemplate skips publishing the "busybox" template.
	NoTemplate bool
	// Groups are the group cleanup policies (default: none, reset refused).
	Groups manager.GroupPolicies
}

// Server is a running API.
type Server struct {
	HTTP    *httptest.Server
	Manager *manager.Manager
	Store   store.Store
	// URL is the API's base URL, prefix included.
	URL string
	// Requests counts the requests that reached the server.
	Requests atomic.Int64
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	if o.MaxPending == 0 {
		o.MaxPending = 100
	}
	s := teststores.Bolt(t, time.Now)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: s, MaxPending: o.MaxPending, Runtimes: []string{"docker"},
		BindRoots: []string{"/srv/berth"}, Logger: logger, WaitPoll: 5 * time.Millisecond, Groups: o.Groups})
	h := httpapi.New(httpapi.Options{Manager: m, Logger: logger, WaitMax: o.WaitMax, RetryAfter: o.RetryAfter,
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: AdminToken, User: "root", Admin: true},
			{Token: AliceToken, User: "alice"},
			{Token: BobToken, User: "bob"},
		})})
	// Every exchange of the real handler is checked against the OpenAPI
	// document; injected faults (Wrap) are outside it, as a gateway's are.
	h = apicontract.Handler(t, h)
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	if o.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(o.Prefix+"/", http.StripPrefix(o.Prefix, h))
		h = mux
	}
	srv := &Server{Manager: m, Store: s}
	inner := h
	srv.HTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.Requests.Add(1)
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.HTTP.Close)
	srv.URL = srv.HTTP.URL + o.Prefix
	if !o.NoTemplate {
		srv.PutTemplate(t, "busybox", BusyboxTemplate)
	}
	return srv
}

// PutTemplate publishes a template through the manager.
func (s *Server) PutTemplate(t testing.TB, name, body string) {
	t.Helper()
	var tpl container.Template
	if err := jsonUnmarshalStrict(body, &tpl); err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	tpl.Name = name
	if _, _, err := s.Manager.PutTemplate(context.Background(), identity.Caller{User: "root", Admin: true}, tpl); err != nil {
		t.Fatalf("putting template %s: %v", name, err)
	}
}

// Drive moves an instance as the workers and the runtime would: worker
// steps through the store, runtime observations through OnEvent.
func (s *Server) Drive(t testing.TB, id string, to fsm.Status) container.Instance {
	t.Helper()
	ctx := context.Background()
	inst, err := s.Store.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	switch to {
	case fsm.Running:
		if inst.Status == fsm.Pending {
			inst = s.transition(t, inst, fsm.Creating)
		}
		if _, err := s.Manager.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedStarted, NodeName: "node-1"}); err != nil {
			t.Fatal(err)
		}
	case fsm.Stopped:
		if inst.Status == fsm.StopPending {
			inst = s.transition(t, inst, fsm.Stopping)
		}
		code := 137
		if _, err := s.Manager.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedExited, ExitCode: &code}); err != nil {
			t.Fatal(err)
		}
	default:
		s.transition(t, inst, to)
	}
	inst, err = s.Store.GetInstance(ctx, id)
	if err != nil || inst.Status != to {
		t.Fatalf("drive %s to %s: got %s, %v", id, to, inst.Status, err)
	}
	return inst
}

func (s *Server) transition(t testing.TB, inst container.Instance, to fsm.Status) container.Instance {
	t.Helper()
	out, err := s.Store.Transition(context.Background(), store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version,
		From: inst.Status, To: to, Event: &container.Event{Type: "Test", From: inst.Status, To: to, At: time.Now(), Actor: container.ActorSystem}})
	if err != nil {
		t.Fatalf("transition %s → %s: %v", inst.Status, to, err)
	}
	return out
}

// FailFirst wraps a handler so that the first n requests matching match
// are answered with status (429 or 503, say) and a Retry-After of
// retryAfter seconds, in problem+json, without reaching the handler.
func FailFirst(n int, status int, retryAfter string, match func(*http.Request) bool) func(http.Handler) http.Handler {
	var left atomic.Int64
	left.Store(int64(n))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if (match == nil || match(r)) && left.Add(-1) >= 0 {
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"type":"https://berth.dev/problems/injected","title":"`+http.StatusText(status)+`","status":`+itoa(status)+`,"detail":"injected fault"}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func jsonUnmarshalStrict(body string, v any) error {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
