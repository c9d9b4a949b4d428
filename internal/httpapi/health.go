package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/identity"
)

// probe serves an unauthenticated health probe on GET and HEAD only.
func (h *handler) probe(pattern string, fn http.HandlerFunc) {
	allow := h.register(pattern, []string{"GET", "HEAD"})
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, allow)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fn(w, r)
	})
}

// probeBody is all an unauthenticated probe learns.
type probeBody struct {
	Status string `json:"status"`
}

// livez answers while the process serves HTTP: it checks nothing else, so
// that a slow store never gets a live process restarted.
func (h *handler) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, probeBody{Status: "ok"})
}

// readyz answers whether requests can be taken now. It says why not only
// when the deployment has no runtime (a configuration key to set, the same
// to anyone); other reasons name internals and are in the admins' /healthz.
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if err := h.m.Runnable(); err != nil {
		w.Header().Set("Retry-After", retrySeconds(h.retryAfter))
		writeProblem(w, r, http.StatusServiceUnavailable, "Service Unavailable", "not ready: "+err.Error(), nil)
		return
	}
	if ready, _ := h.health(r.Context()); !ready {
		w.Header().Set("Retry-After", retrySeconds(h.retryAfter))
		writeProblem(w, r, http.StatusServiceUnavailable, "Service Unavailable", "not ready", nil)
		return
	}
	writeJSON(w, http.StatusOK, probeBody{Status: "ready"})
}

// healthz is the detailed report, for admins. It is 200 whatever it
// reports: the verdict is /readyz's, and an error status would promise a
// problem document instead of the report.
func (h *handler) healthz(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	if !c.Admin {
		return h.forbidden("the health report is for admins; GET /readyz tells whether berth is ready")
	}
	_, report := h.health(r.Context())
	if err := h.m.Runnable(); err != nil {
		// The same verdict as /readyz's, in the report's own shape.
		if m, ok := report.(map[string]any); ok {
			m["ok"], m["status"] = false, "not ready"
			m["runtimes"] = map[string]any{"ok": false, "error": err.Error()}
		}
	}
	writeJSON(w, http.StatusOK, report)
	return nil
}
