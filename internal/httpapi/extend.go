package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// extendContainer serves POST /api/containers/{id}/extend: 200 with the
// instance and its new expires_at; 422 past the lifetime's max (naming it),
// 409 for an instance that has ended or has no lifetime, 404 for another
// owner's.
func (h *handler) extendContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	var req manager.ExtendRequest
	if err := decodeBody(r, h.bodyLimit, &req); err != nil {
		return err
	}
	in, err := h.m.Extend(r.Context(), c, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	writeInstance(w, http.StatusOK, in)
	return nil
}
