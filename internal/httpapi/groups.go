package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
)

// groupOwnerParam is the owner= query parameter: admins may name another
// user's group; anyone else naming one is a 400, as for containers.
func groupOwnerParam(r *http.Request, c identity.Caller) (string, error) {
	owner := r.URL.Query().Get("owner")
	if owner != "" && !c.Admin {
		return "", &badRequest{msg: "only admins may name an owner", fields: fieldErr("owner", "admin only")}
	}
	return owner, nil
}

func (h *handler) listGroups(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	owner, err := groupOwnerParam(r, c)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		return &badRequest{msg: "invalid query parameters", fields: fieldErr("limit", err.Error())}
	}
	scope := cursorScope{User: c.User, Kind: "groups", Filter: owner}
	after, err := decodeCursor(q.Get("cursor"), scope)
	if err != nil {
		return err
	}
	items, next, err := h.m.ListGroups(r.Context(), c, owner, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listBody[container.GroupSummary]{Items: items, NextCursor: encodeCursor(next, scope)})
	return nil
}

func (h *handler) getGroup(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	owner, err := groupOwnerParam(r, c)
	if err != nil {
		return err
	}
	g, err := h.m.GetGroup(r.Context(), c, owner, r.PathValue("group"))
	if err != nil {
		return err
	}
	for i := range g.Members {
		g.Members[i] = instanceBody(g.Members[i])
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

// FinishRequest is POST /api/groups/{group}/finish.
type FinishRequest struct {
	Outcome string `json:"outcome"`
}

func (h *handler) finishGroup(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	owner, err := groupOwnerParam(r, c)
	if err != nil {
		return err
	}
	var req FinishRequest
	if err := decodeBody(r, h.bodyLimit, &req); err != nil {
		return err
	}
	res, err := h.m.FinishGroup(r.Context(), c, owner, r.PathValue("group"), req.Outcome, RequestIDFrom(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, res)
	return nil
}

func (h *handler) resetGroup(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	owner, err := groupOwnerParam(r, c)
	if err != nil {
		return err
	}
	res, err := h.m.ResetGroup(r.Context(), c, owner, r.PathValue("group"), RequestIDFrom(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, res)
	return nil
}
