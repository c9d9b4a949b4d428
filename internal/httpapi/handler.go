// Package httpapi is berth's HTTP API (docs/api.md) as one http.Handler,
// served by the api Lambda (through functions/api's adapter) and by the
// local server alike.
package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/console"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
)

// Authenticator tells who makes a request. ok=false means the request is
// not authenticated (401); there is no anonymous caller.
type Authenticator func(r *http.Request) (c identity.Caller, ok bool)

// HealthFunc reports whether berth can take requests now (the store and the
// queues answer) and the detailed report of its parts. ready=false makes
// GET /readyz answer 503. A part that only degrades
// service (one Docker host down) belongs in the report, not in ready. The
// report may name internals (paths, engine errors): only admins see it.
type HealthFunc func(ctx context.Context) (ready bool, report any)

// Options configure the handler.
type Options struct {
	Manager *manager.Manager
	Auth    Authenticator
	Logger  *slog.Logger
	// BodyLimit caps request bodies: larger is 413. Defaults to
	// config.DefaultRequestBodyLimit.
	BodyLimit int64
	// WaitMax caps GET /wait's timeout. Defaults to config.DefaultWaitMax.
	WaitMax time.Duration
	// Health, if set, serves GET /readyz (anyone: ready or not, nothing
	// more) and GET /healthz (admins: the detailed report). GET /livez is
	// always served.
	Health HealthFunc
	// RetryAfter is what a 429 or 503 asks clients to wait. Defaults to
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// MaxWaiters caps the GET /wait calls served at once; beyond it a
	// wait is 429 with Retry-After. Each waiter holds a connection and a
	// goroutine for up to WaitMax. Zero or less: no cap.
	MaxWaiters int
	// MaxWaitersPerCaller caps the GET /wait calls one caller (one user)
	// has served at once, so that one caller cannot take all MaxWaiters;
	// beyond it a wait is 429 with Retry-After. Zero or less: no cap.
	MaxWaitersPerCaller int
	// MaxFollows caps the logs follows (GET
	// /api/containers/{id}/logs?follow=true, streamed) served at once, and
	// MaxFollowsPerCaller one caller's: beyond either a follow is 429 with
	// Retry-After. Each holds a connection, a goroutine and a runtime log
	// stream for as long as its container runs. Zero or less: no cap.
	MaxFollows, MaxFollowsPerCaller int
	// Logs serves GET /api/containers/{id}/logs; nil answers it 501 (the
	// api function on AWS, which holds no runtime client).
	Logs LogSource
	// LogsPolled answers follow=true with the bounded answer and a
	// Berth-Next-Since cursor to poll with instead of a stream: behind API
	// Gateway, which buffers an answer and ends it at 30 s, a stream could
	// never reach the client (the logs function on AWS).
	LogsPolled bool
	// Stats serves GET /api/containers/{id}/stats; nil answers it 501 (the
	// api function on AWS).
	Stats StatsSource
	// Exec serves POST /api/containers/{id}/exec; a nil Runner answers it
	// 501 (the api function on AWS).
	Exec ExecOptions
	// Console configures the web console served under /console (its
	// identity provider, if any).
	Console console.Options
	// MetricsEndpoint serves GET /metrics (Prometheus's text format) once
	// the caller is let in; nil answers it 501 (the api function on AWS,
	// whose metrics CloudWatch has).
	MetricsEndpoint http.Handler
	// MetricsToken, if set, is a bearer token that may read GET /metrics
	// without being a user (server.metrics_token: a Prometheus scraper's).
	MetricsToken string
	// Metrics, if set, counts every request answered (MetricHTTPRequests).
	// berth serve sets it; on AWS API Gateway counts them.
	Metrics *metrics.Emitter
}

// DefaultRetryAfter is Options.RetryAfter's default.
const DefaultRetryAfter = 2 * time.Second

type handler struct {
	m          *manager.Manager
	auth       Authenticator
	log        *slog.Logger
	bodyLimit  int64
	waitMax    time.Duration
	health     HealthFunc
	logs       LogSource
	logsPolled bool
	stats      StatsSource
	exec       ExecOptions
	retryAfter time.Duration
	// waiters caps the GET /wait calls served at once.
	waiters *waiterLimits
	// follows caps the logs follows streamed at once.
	follows *waiterLimits
	mux     *http.ServeMux
	// routes is every method and pattern registered, for Routes.
	routes []Route
	// metricsEndpoint, metricsToken and metrics are Options'.
	metricsEndpoint http.Handler
	metricsToken    string
	metrics         *metrics.Emitter
}

// Route is one method on one path pattern (ServeMux syntax: /api/containers/{id}).
type Route struct {
	Method  string
	Pattern string
}

// Routes lists the routes a handler made by New serves, sorted by pattern
// then method; nil for any other handler. The OpenAPI document's test
// compares it with the paths the document lists.
func Routes(h http.Handler) []Route {
	hh, ok := h.(*handler)
	if !ok {
		return nil
	}
	out := slices.Clone(hh.routes)
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(strings.Compare(a.Pattern, b.Pattern), strings.Compare(a.Method, b.Method))
	})
	return out
}

// New returns the API handler.
func New(o Options) http.Handler {
	h := &handler{m: o.Manager, auth: o.Auth, log: o.Logger, bodyLimit: o.BodyLimit, waitMax: o.WaitMax,
		health: o.Health, logs: o.Logs, logsPolled: o.LogsPolled, stats: o.Stats, exec: o.Exec, retryAfter: o.RetryAfter, mux: http.NewServeMux(),
		metricsEndpoint: o.MetricsEndpoint, metricsToken: o.MetricsToken, metrics: o.Metrics}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.bodyLimit <= 0 {
		h.bodyLimit = config.DefaultRequestBodyLimit
	}
	if h.waitMax <= 0 {
		h.waitMax = config.DefaultWaitMax
	}
	if h.retryAfter <= 0 {
		h.retryAfter = DefaultRetryAfter
	}
	h.waiters = newWaiterLimits(o.MaxWaiters, o.MaxWaitersPerCaller)
	h.follows = newFollowLimits(o.MaxFollows, o.MaxFollowsPerCaller)
	// One pattern per path, methods dispatched by hand, so that 404 and 405
	// answer in problem+json like every other error.
	h.route("/api/containers", map[string]apiFunc{"GET": h.listContainers, "POST": h.createContainer})
	h.route("/api/containers/{id}", map[string]apiFunc{"GET": h.getContainer, "DELETE": h.deleteContainer})
	h.route("/api/containers/{id}/start", map[string]apiFunc{"POST": h.startContainer})
	h.route("/api/containers/{id}/stop", map[string]apiFunc{"POST": h.stopContainer})
	h.route("/api/containers/{id}/pause", map[string]apiFunc{"POST": h.pauseContainer})
	h.route("/api/containers/{id}/resume", map[string]apiFunc{"POST": h.resumeContainer})
	h.route("/api/containers/{id}/extend", map[string]apiFunc{"POST": h.extendContainer})
	h.route("/api/containers/{id}/wait", map[string]apiFunc{"GET": h.waitContainer})
	h.route("/api/containers/{id}/events", map[string]apiFunc{"GET": h.listEvents})
	h.route("/api/containers/{id}/logs", map[string]apiFunc{"GET": h.containerLogs})
	h.route("/api/containers/{id}/stats", map[string]apiFunc{"GET": h.containerStats})
	h.route("/api/containers/{id}/exec", map[string]apiFunc{"POST": h.execContainer})
	h.route("/api/groups", map[string]apiFunc{"GET": h.listGroups})
	h.route("/api/groups/{group}", map[string]apiFunc{"GET": h.getGroup})
	h.route("/api/groups/{group}/finish", map[string]apiFunc{"POST": h.finishGroup})
	h.route("/api/groups/{group}/reset", map[string]apiFunc{"POST": h.resetGroup})
	h.route("/api/templates", map[string]apiFunc{"GET": h.listTemplates})
	h.route("/api/templates/{name}", map[string]apiFunc{"GET": h.getTemplate, "PUT": h.putTemplate, "DELETE": h.deleteTemplate})
	h.route("/api/bind-ledger", map[string]apiFunc{"GET": h.getBindLedger})
	h.route("/api/bind-ledger/{id}", map[string]apiFunc{"DELETE": h.retireBindEntry})
	h.route("/api/webhooks", map[string]apiFunc{"GET": h.listWebhooks, "POST": h.createWebhook})
	h.route("/api/webhooks/{id}", map[string]apiFunc{"GET": h.getWebhook, "DELETE": h.deleteWebhook})
	h.route("/api/webhooks/{id}/deliveries", map[string]apiFunc{"GET": h.listDeliveries})
	h.route("/api/webhooks/{id}/deliveries/{delivery_id}/redeliver", map[string]apiFunc{"POST": h.redeliver})
	h.route("/api/quotas", map[string]apiFunc{"GET": h.listQuotas})
	h.route("/api/quotas/me", map[string]apiFunc{"GET": h.myQuotas})
	h.route("/api/quotas/users/{user}", map[string]apiFunc{"GET": h.getQuota, "PUT": h.putQuota, "DELETE": h.deleteQuota})
	h.route("/api/quotas/teams/{team}", map[string]apiFunc{"GET": h.getQuota, "PUT": h.putQuota, "DELETE": h.deleteQuota})
	h.route("/api/usage", map[string]apiFunc{"GET": h.getUsage})
	h.public(OpenAPIPath, map[string]http.HandlerFunc{"GET": h.openAPI})
	h.probe("/livez", h.livez)
	if h.health != nil {
		h.probe("/readyz", h.readyz)
		h.route("/healthz", map[string]apiFunc{"GET": h.healthz, "HEAD": h.healthz})
	}
	h.serveMetrics()
	// The web console (internal/console): static files that use the API
	// above like any client; GET / sends a browser there.
	ch := console.New(o.Console)
	h.mux.Handle(console.Path, ch)
	h.mux.Handle(console.Path+"/", ch)
	h.mux.HandleFunc("GET /{$}", console.Redirect)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusNotFound, "Not Found", "no such route: "+r.URL.Path, nil)
	})
	return h
}

// apiFunc serves an authenticated request; a returned error becomes a
// problem response.
type apiFunc func(w http.ResponseWriter, r *http.Request, c identity.Caller) error

func (h *handler) route(pattern string, methods map[string]apiFunc) {
	allow := h.register(pattern, slices.Sorted(maps.Keys(methods)))
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		fn, ok := methods[r.Method]
		if !ok {
			methodNotAllowed(w, r, allow)
			return
		}
		c, ok := h.auth(r)
		if !ok || c.User == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
			writeProblem(w, r, http.StatusUnauthorized, "Unauthorized", "a valid bearer token is required", nil)
			return
		}
		c, err := actingForQuery(r, c)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		r = r.WithContext(identity.With(r.Context(), c))
		if slot, ok := r.Context().Value(callerSlotKey{}).(*identity.Caller); ok {
			*slot = c // for the access log, which sees the request before auth
		}
		if err := fn(w, r, c); err != nil {
			h.writeError(w, r, err)
		}
	})
}

// register lists pattern's methods among the handler's routes and returns
// them as an Allow header says them.
func (h *handler) register(pattern string, methods []string) (allow string) {
	for _, m := range methods {
		h.routes = append(h.routes, Route{Method: m, Pattern: pattern})
	}
	return strings.Join(methods, ", ")
}

// methodNotAllowed is the one 405 of every route: the problem, and the
// Allow header listing allow ("GET, HEAD").
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeProblem(w, r, http.StatusMethodNotAllowed, "Method Not Allowed", r.Method+" is not allowed here; allowed: "+allow, nil)
}

// callerSlotKey holds a *identity.Caller that route fills in once the
// request is authenticated, so that the access log can name the user.
type callerSlotKey struct{}

// public serves a route that needs no authentication (the OpenAPI
// document), with the same 405 as route.
func (h *handler) public(pattern string, methods map[string]http.HandlerFunc) {
	allow := h.register(pattern, slices.Sorted(maps.Keys(methods)))
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		fn, ok := methods[r.Method]
		if !ok {
			methodNotAllowed(w, r, allow)
			return
		}
		fn(w, r)
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := requestID(r)
	var caller identity.Caller
	ctx := context.WithValue(withRequestID(r.Context(), reqID), callerSlotKey{}, &caller)
	r = r.WithContext(manager.WithTrace(ctx, traceContext(r)))
	w.Header().Set("X-Request-Id", reqID)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			h.log.ErrorContext(r.Context(), "panic serving request", "request_id", reqID, "panic", p)
			if !rec.wrote {
				writeProblem(rec, r, http.StatusInternalServerError, "Internal Server Error", "request "+reqID+" failed", nil)
			}
		}
		h.countRequest(r, rec.status)
		h.log.InfoContext(r.Context(), "request", "request_id", reqID, "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration_ms", time.Since(start).Milliseconds(), "user", caller.User, "actor", caller.Actor())
	}()
	// ServeMux answers an unclean path ("//api/x", "/a/../b") with a
	// redirect and an HTML body; berth's routes are all clean, so such a
	// path names no resource.
	if p := r.URL.Path; p == "" || path.Clean(p) != p {
		writeProblem(rec, r, http.StatusNotFound, "Not Found", "no such route: "+r.URL.Path, nil)
		return
	}
	// r.URL.Query drops what it cannot decode; a malformed query is
	// refused rather than read as a different one.
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		writeProblem(rec, r, http.StatusBadRequest, "Bad Request", "the query string is malformed: "+err.Error(), nil)
		return
	}
	h.mux.ServeHTTP(rec, r)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (a logs follow
// flushes and lifts the write deadline).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}
