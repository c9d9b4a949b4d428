package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
)

// getBindLedger is GET /api/bind-ledger (admins): every bind source
// pattern any template ever stored.
func (h *handler) getBindLedger(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	l, err := h.m.BindLedger(r.Context(), c)
	if err != nil {
		return err
	}
	if l.Entries == nil {
		l.Entries = []container.BindEntry{}
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// retireBindEntry is DELETE /api/bind-ledger/{id} (admins): the logged
// retire of one entry, after the host directories were cleaned.
func (h *handler) retireBindEntry(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	e, err := h.m.RetireBind(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}
