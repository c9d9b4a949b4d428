package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strconv"

	"github.com/berth-io/berth/internal/identity"
)

// MetricsPath is where `berth serve` serves its metrics in Prometheus's
// text format (docs/api.md, Metrics).
const MetricsPath = "/metrics"

// MetricHTTPRequests counts the requests answered, by Method, Route (the
// pattern that served it, "none" for a path no route matched) and Code
// (the status): creates accepted are its POST /api/containers 202s, creates
// refused its 429s.
const MetricHTTPRequests = "HTTPRequests"

// serveMetrics registers GET /metrics: for an admin, or for a scraper
// with Options.MetricsToken; 501 where there is no Options.MetricsEndpoint
// (the api function on AWS: CloudWatch has the metrics).
func (h *handler) serveMetrics() {
	allow := h.register(MetricsPath, []string{http.MethodGet})
	h.mux.HandleFunc(MetricsPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, allow)
			return
		}
		if !h.isScraper(r) {
			c, ok := h.auth(r)
			if !ok || c.User == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
				writeProblem(w, r, http.StatusUnauthorized, "Unauthorized", "a valid bearer token is required", nil)
				return
			}
			if slot, ok := r.Context().Value(callerSlotKey{}).(*identity.Caller); ok {
				*slot = c
			}
			if !c.Admin {
				writeProblem(w, r, http.StatusForbidden, "Forbidden",
					"the metrics are for admins and for the scraper's token (server.metrics_token)", nil)
				return
			}
		}
		if h.metricsEndpoint == nil {
			writeProblem(w, r, http.StatusNotImplemented, "Not Implemented",
				"the Prometheus metrics are served by berth serve; on AWS they are in CloudWatch (see docs/api.md, Metrics)", nil)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h.metricsEndpoint.ServeHTTP(w, r)
	})
}

// isScraper reports whether r carries the scraper's token, compared in
// constant time; never when none is configured.
func (h *handler) isScraper(r *http.Request) bool {
	if h.metricsToken == "" {
		return false
	}
	got, ok := bearer(r)
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.metricsToken)) == 1
}

// countRequest adds the answered request to MetricHTTPRequests. Only the
// methods the API knows are named, so that a client cannot grow the
// series with made-up ones.
func (h *handler) countRequest(r *http.Request, status int) {
	if h.metrics == nil {
		return
	}
	method, route := r.Method, r.Pattern
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
	default:
		method = "other"
	}
	if route == "" {
		route = "none"
	}
	h.metrics.Count(MetricHTTPRequests, 1, "Method", method, "Route", route, "Code", strconv.Itoa(status))
}
