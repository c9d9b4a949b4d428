// Package httpapi is berth's HTTP API (docs/api.md) as one http.Handler,
// served by the api Lambda (through functions/api's adapter) and by the
// local server alike.
package httpapi

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// Authenticator tells who makes a request. ok=false means the request is
// not authenticated (401); there is no anonymous caller.
type Authenticator func(r *http.Request) (c identity.Caller, ok bool)

// HealthFunc reports the reachability of berth's parts for GET /healthz;
// healthy=false answers 503.
type HealthFunc func(ctx context.Context) (healthy bool, report any)

// Options configure the handler.
type Options struct {
	Manager *manager.Manager
	Auth    Authenticator
	Logger  *slog.Logger
	// BodyLimit caps request bodies (default 64 KiB): larger is 413.
	BodyLimit int64
	// WaitMax caps GET /wait's timeout (default 25 s, under API Gateway's 30 s).
	WaitMax time.Duration
	// Health, if set, serves GET /healthz (the local server; API Gateway
	// has no such route).
	Health HealthFunc
	// RetryAfter is what a 429 or 503 asks clients to wait (default 2 s).
	RetryAfter time.Duration
}

type handler struct {
	m          *manager.Manager
	auth       Authenticator
	log        *slog.Logger
	bodyLimit  int64
	waitMax    time.Duration
	health     HealthFunc
	retryAfter time.Duration
	mux        *http.ServeMux
}

// New returns the API handler.
func New(o Options) http.Handler {
	h := &handler{m: o.Manager, auth: o.Auth, log: o.Logger, bodyLimit: o.BodyLimit, waitMax: o.WaitMax,
		health: o.Health, retryAfter: o.RetryAfter, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.bodyLimit <= 0 {
		h.bodyLimit = 64 << 10
	}
	if h.waitMax <= 0 {
		h.waitMax = 25 * time.Second
	}
	if h.retryAfter <= 0 {
		h.retryAfter = 2 * time.Second
	}
	// One pattern per path, methods dispatched by hand, so that 404 and 405
	// answer in problem+json like every other error.
	h.route("/api/containers", map[string]apiFunc{"GET": h.listContainers, "POST": h.createContainer})
	h.route("/api/containers/{id}", map[string]apiFunc{"GET": h.getContainer, "DELETE": h.deleteContainer})
	h.route("/api/containers/{id}/start", map[string]apiFunc{"POST": h.startContainer})
	h.route("/api/containers/{id}/stop", map[string]apiFunc{"POST": h.stopContainer})
	h.route("/api/containers/{id}/wait", map[string]apiFunc{"GET": h.waitContainer})
	h.route("/api/containers/{id}/events", map[string]apiFunc{"GET": h.listEvents})
	h.route("/api/templates", map[string]apiFunc{"GET": h.listTemplates})
	h.route("/api/templates/{name}", map[string]apiFunc{"GET": h.getTemplate, "PUT": h.putTemplate, "DELETE": h.deleteTemplate})
	if h.health != nil {
		h.mux.HandleFunc("/healthz", h.healthz)
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusNotFound, "Not Found", "no such route: "+r.URL.Path, nil)
	})
	return h
}

// apiFunc serves an authenticated request; a returned error becomes a
// problem response.
type apiFunc func(w http.ResponseWriter, r *http.Request, c identity.Caller) error

func (h *handler) route(pattern string, methods map[string]apiFunc) {
	names := slices.Sorted(maps.Keys(methods))
	allow := strings.Join(names, ", ")
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		fn, ok := methods[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeProblem(w, r, http.StatusMethodNotAllowed, "Method Not Allowed", r.Method+" is not allowed here; allowed: "+allow, nil)
			return
		}
		c, ok := h.auth(r)
		if !ok || c.User == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
			writeProblem(w, r, http.StatusUnauthorized, "Unauthorized", "a valid bearer token is required", nil)
			return
		}
		r = r.WithContext(identity.With(r.Context(), c))
		if err := fn(w, r, c); err != nil {
			h.writeError(w, r, err)
		}
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := requestID(r)
	r = r.WithContext(manager.WithTrace(withRequestID(r.Context(), reqID), traceContext(r)))
	w.Header().Set("X-Request-Id", reqID)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			h.log.ErrorContext(r.Context(), "panic serving request", "request_id", reqID, "panic", p)
			if !rec.wrote {
				writeProblem(rec, r, http.StatusInternalServerError, "Internal Server Error", "request "+reqID+" failed", nil)
			}
		}
		user := ""
		if c, ok := identity.From(r.Context()); ok {
			user = c.User
		}
		h.log.InfoContext(r.Context(), "request", "request_id", reqID, "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration_ms", time.Since(start).Milliseconds(), "user", user)
	}()
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

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	ok, report := h.health(r.Context())
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, report)
}
