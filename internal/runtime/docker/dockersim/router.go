package dockersim

import (
	"net/http"
	"regexp"
	"strings"
)

// versionPrefix is the API version a negotiated client puts in front of
// every path (/v1.47/containers/json).
var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)

// router routes the Engine API subset the simulation serves.
func (h *Host) router() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_ping", h.ping)
	mux.HandleFunc("HEAD /_ping", h.ping)
	mux.HandleFunc("GET /version", h.version)
	mux.HandleFunc("GET /info", h.info)
	mux.HandleFunc("GET /events", h.events)

	mux.HandleFunc("POST /containers/create", h.containerCreate)
	mux.HandleFunc("GET /containers/json", h.containerList)
	mux.HandleFunc("GET /containers/{id}/json", h.containerInspect)
	mux.HandleFunc("POST /containers/{id}/start", h.containerStart)
	mux.HandleFunc("POST /containers/{id}/stop", h.containerStop)
	mux.HandleFunc("POST /containers/{id}/kill", h.containerKill)
	mux.HandleFunc("POST /containers/{id}/pause", h.containerFreeze(true))
	mux.HandleFunc("POST /containers/{id}/unpause", h.containerFreeze(false))
	mux.HandleFunc("DELETE /containers/{id}", h.containerRemove)
	mux.HandleFunc("GET /containers/{id}/stats", h.containerStats)
	mux.HandleFunc("GET /containers/{id}/logs", h.containerLogs)
	mux.HandleFunc("POST /containers/{id}/exec", h.containerExec)

	mux.HandleFunc("GET /images/json", func(w http.ResponseWriter, _ *http.Request) { h.imageList(w) })
	mux.HandleFunc("POST /images/create", h.imagePull)
	mux.HandleFunc("GET /images/", func(w http.ResponseWriter, r *http.Request) {
		// An image name holds slashes: /images/registry/repo:tag/json.
		name, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/images/"), "/json")
		if !ok || name == "" {
			writeError(w, http.StatusNotFound, "page not found")
			return
		}
		h.imageInspect(w, name)
	})
	mux.HandleFunc("GET /volumes/{name}", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "get "+r.PathValue("name")+": no such volume")
	})
	mux.HandleFunc("DELETE /volumes/{name}", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "get "+r.PathValue("name")+": no such volume")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotImplemented, "the simulated engine does not serve "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loc := versionPrefix.FindStringIndex(r.URL.Path); loc != nil {
			r.URL.Path = r.URL.Path[loc[1]-1:]
			r.URL.RawPath = ""
		}
		mux.ServeHTTP(w, r)
	})
}
