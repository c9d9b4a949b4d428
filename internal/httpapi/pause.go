package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/identity"
)

// pauseContainer serves POST /api/containers/{id}/pause: 202 with the
// instance (still running: the worker pauses it and records paused), 200
// when it is paused already, 409 from any status the FSM does not lead to
// paused from, and 409 naming the runtime for one that cannot pause.
func (h *handler) pauseContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	return h.lifecycle(h.m.Pause, http.StatusOK)(w, r, c)
}

// resumeContainer serves POST /api/containers/{id}/resume, as pause the
// other way: 202 (the instance still paused until the worker has resumed
// it), 200 when it runs already.
func (h *handler) resumeContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	return h.lifecycle(h.m.Resume, http.StatusOK)(w, r, c)
}
