package httpapi

import (
	"net/http"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
)

func (h *handler) listTemplates(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	ts, err := h.m.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []container.Template{}
	}
	for i := range ts {
		ts[i] = templateBody(ts[i], c)
	}
	writeJSON(w, http.StatusOK, listBody[container.Template]{Items: ts})
	return nil
}

func (h *handler) getTemplate(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	t, err := h.m.GetTemplate(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(t.Version))
	writeJSON(w, http.StatusOK, templateBody(t, c))
	return nil
}

// redactedValue stands for every template env value a non-admin reads.
const redactedValue = "[redacted]"

// templateBody is a template as c may see it: admins see it whole; others
// see which variables env and secret_env set, not their values (env values
// are often credentials) nor the secrets' names.
func templateBody(t container.Template, c identity.Caller) container.Template {
	if c.Admin {
		return t
	}
	redact := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k := range m {
			out[k] = redactedValue
		}
		return out
	}
	t.Env, t.SecretEnv = redact(t.Env), redact(t.SecretEnv)
	return t
}

func (h *handler) putTemplate(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	if !c.Admin {
		// Refuse before reading the body: non-admins learn nothing more.
		return h.forbidden("writing templates is for admins")
	}
	var t container.Template
	if err := decodeBody(r, h.bodyLimit, &t); err != nil {
		return err
	}
	name := r.PathValue("name")
	if t.Name == "" {
		t.Name = name
	}
	if t.Name != name {
		return &badRequest{msg: "the body's name must match the path", fields: fieldErr("name", "must equal "+name)}
	}
	stored, created, err := h.m.PutTemplate(r.Context(), c, t)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/templates/"+stored.Name)
	}
	w.Header().Set("ETag", etag(stored.Version))
	writeJSON(w, status, stored)
	return nil
}

func (h *handler) deleteTemplate(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	if err := h.m.DeleteTemplate(r.Context(), c, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
