package httpapi

import (
	"net/http"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// webhookRequest is the body of POST /api/webhooks.
type webhookRequest struct {
	URL      string       `json:"url"`
	Template string       `json:"template,omitempty"`
	Group    string       `json:"group,omitempty"`
	Statuses []fsm.Status `json:"statuses,omitempty"`
}

// webhookBody is a subscription as the API shows it: never its secret,
// which only the answer to the create carries (webhookCreated).
type webhookBody struct {
	ID        string       `json:"id"`
	Owner     string       `json:"owner"`
	AllOwners bool         `json:"all_owners"`
	URL       string       `json:"url"`
	Template  string       `json:"template,omitempty"`
	Group     string       `json:"group,omitempty"`
	Statuses  []fsm.Status `json:"statuses"`
	CreatedAt time.Time    `json:"created_at"`
}

// webhookCreated is the answer to the create: the subscription and, this
// once, its secret.
type webhookCreated struct {
	webhookBody
	Secret string `json:"secret"`
}

func webhookView(w container.Webhook) webhookBody {
	st := w.Statuses
	if st == nil {
		st = []fsm.Status{}
	}
	return webhookBody{ID: w.ID, Owner: w.Owner, AllOwners: w.AllOwners, URL: w.URL, Template: w.Template,
		Group: w.Group, Statuses: st, CreatedAt: w.CreatedAt}
}

// createWebhook is POST /api/webhooks: 201 with the secret, shown once.
func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	var req webhookRequest
	if err := decodeBody(r, h.bodyLimit, &req); err != nil {
		return err
	}
	wh, err := h.m.CreateWebhook(r.Context(), c, manager.WebhookRequest{
		URL: req.URL, Template: req.Template, Group: req.Group, Statuses: req.Statuses,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/webhooks/"+wh.ID)
	// The secret must not stay in any cache on the way.
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, webhookCreated{webhookBody: webhookView(wh), Secret: wh.Secret})
	return nil
}

// listWebhooks is GET /api/webhooks: the caller's subscriptions (an
// admin's: everyone's).
func (h *handler) listWebhooks(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	ws, err := h.m.ListWebhooks(r.Context(), c)
	if err != nil {
		return err
	}
	items := make([]webhookBody, len(ws))
	for i, wh := range ws {
		items[i] = webhookView(wh)
	}
	writeJSON(w, http.StatusOK, listBody[webhookBody]{Items: items})
	return nil
}

// getWebhook is GET /api/webhooks/{id}.
func (h *handler) getWebhook(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	wh, err := h.m.GetWebhook(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookView(wh))
	return nil
}

// deleteWebhook is DELETE /api/webhooks/{id}: 204.
func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	if err := h.m.DeleteWebhook(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
