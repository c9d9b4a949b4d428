package dockersim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/moby/moby/api/types/image"
)

// normalizeImage is an image reference with its tag (latest when none),
// so "busybox" and "busybox:latest" are one image.
func normalizeImage(ref string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref
	}
	return ref + ":latest"
}

// imageInspect serves GET /images/{name}/json.
func (h *Host) imageInspect(w http.ResponseWriter, name string) {
	h.mu.Lock()
	id, ok := h.images[normalizeImage(name)]
	h.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "No such image: "+name)
		return
	}
	writeJSON(w, image.InspectResponse{ID: "sha256:" + id, RepoTags: []string{normalizeImage(name)}, Os: "linux", Architecture: "amd64"})
}

// imageList serves GET /images/json.
func (h *Host) imageList(w http.ResponseWriter) {
	h.mu.Lock()
	out := make([]image.Summary, 0, len(h.images))
	for ref, id := range h.images {
		out = append(out, image.Summary{ID: "sha256:" + id, RepoTags: []string{ref}})
	}
	h.mu.Unlock()
	writeJSON(w, out)
}

// imagePull serves POST /images/create: after the fleet's pull time the
// image is present, and the answer is the engine's progress stream.
func (h *Host) imagePull(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := q.Get("fromImage")
	if ref == "" {
		writeError(w, http.StatusBadRequest, "fromImage is required")
		return
	}
	if tag := q.Get("tag"); tag != "" {
		sep := ":"
		if strings.HasPrefix(tag, "sha256:") {
			sep = "@"
		}
		ref += sep + tag
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]string{"status": "Pulling from " + ref})
	if d := h.fleet.opts.PullTime; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	h.mu.Lock()
	if _, ok := h.images[normalizeImage(ref)]; !ok {
		h.images[normalizeImage(ref)] = newID()
	}
	h.mu.Unlock()
	_ = enc.Encode(map[string]string{"status": "Status: Downloaded newer image for " + ref})
}
