package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// quotaFields are quotas as the API writes them, limits and use alike:
// counts, cpus a number of cores, memory an amount of bytes with a binary
// suffix ("8Gi"); as limits, 0 is no limit.
type quotaFields struct {
	Instances int64       `json:"instances"`
	Running   int64       `json:"running"`
	Pending   int64       `json:"pending"`
	CPUs      json.Number `json:"cpus"`
	Memory    string      `json:"memory"`
}

func quotaView(u container.QuotaUse) quotaFields {
	l := container.QuotaLimitsOf(u)
	f := quotaFields{Instances: u.Instances, Running: u.Running, Pending: u.Pending, CPUs: "0", Memory: "0"}
	if l.CPUs != "" {
		f.CPUs = json.Number(l.CPUs)
	}
	if l.Memory != "" {
		f.Memory = l.Memory
	}
	return f
}

// quotaOverrideBody is one override.
type quotaOverrideBody struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	quotaFields
	UpdatedAt time.Time `json:"updated_at"`
}

func overrideView(o store.QuotaOverride) quotaOverrideBody {
	return quotaOverrideBody{Kind: o.Subject.Kind, Name: o.Subject.Name, quotaFields: quotaView(o.Limits), UpdatedAt: o.UpdatedAt}
}

// quotaStandingBody is one subject's limits and use (GET /api/quotas/me).
type quotaStandingBody struct {
	Name     string      `json:"name"`
	Limits   quotaFields `json:"limits"`
	Override bool        `json:"override"`
	Used     quotaFields `json:"used"`
}

func standingView(s manager.QuotaStanding) quotaStandingBody {
	return quotaStandingBody{Name: s.Subject.Name, Limits: quotaView(s.Limits), Override: s.Override, Used: quotaView(s.Used)}
}

// quotaSubject is the subject of a /api/quotas/users/{user} or
// /api/quotas/teams/{team} request.
func quotaSubject(r *http.Request) store.QuotaSubject {
	if name := r.PathValue("user"); name != "" {
		return store.QuotaSubject{Kind: store.QuotaUser, Name: name}
	}
	return store.QuotaSubject{Kind: store.QuotaTeam, Name: r.PathValue("team")}
}

// putQuota is PUT /api/quotas/{users|teams}/{name} (admins): 200 with the
// override, which applies from the next create or start.
func (h *handler) putQuota(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	var req quotaFields
	if err := decodeBody(r, h.bodyLimit, &req); err != nil {
		return err
	}
	cpus := req.CPUs.String()
	o, err := h.m.PutQuota(r.Context(), c, quotaSubject(r), container.QuotaLimits{
		Instances: req.Instances, Running: req.Running, Pending: req.Pending, CPUs: cpus, Memory: req.Memory,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, overrideView(o))
	return nil
}

// getQuota is GET /api/quotas/{users|teams}/{name} (admins): the override,
// 404 when there is none (the default applies).
func (h *handler) getQuota(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	o, err := h.m.GetQuota(r.Context(), c, quotaSubject(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, overrideView(o))
	return nil
}

// deleteQuota is DELETE /api/quotas/{users|teams}/{name} (admins): 204.
func (h *handler) deleteQuota(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	if err := h.m.DeleteQuota(r.Context(), c, quotaSubject(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// quotaListBody is GET /api/quotas: the default and every override.
type quotaListBody struct {
	Default quotaFields         `json:"default"`
	Items   []quotaOverrideBody `json:"items"`
}

// listQuotas is GET /api/quotas (admins).
func (h *handler) listQuotas(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	l, def, err := h.m.ListQuotas(r.Context(), c)
	if err != nil {
		return err
	}
	body := quotaListBody{Default: quotaView(def), Items: make([]quotaOverrideBody, len(l))}
	for i, o := range l {
		body.Items[i] = overrideView(o)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// myQuotasBody is GET /api/quotas/me.
type myQuotasBody struct {
	User quotaStandingBody  `json:"user"`
	Team *quotaStandingBody `json:"team,omitempty"`
}

// myQuotas is GET /api/quotas/me (anyone): the caller's limits and use,
// and their team's.
func (h *handler) myQuotas(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	user, team, err := h.m.MyQuotas(r.Context(), c)
	if err != nil {
		return err
	}
	body := myQuotasBody{User: standingView(user)}
	if team != nil {
		v := standingView(*team)
		body.Team = &v
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// quotaExceededType is the problem type of a refusal over a quota.
const quotaExceededType = problemTypeBase + "quota-exceeded"

// quotaProblem fills in the refusal of qe: which quota of which subject,
// its limit and its use (cpus in cores, memory in bytes).
func quotaProblem(p *Problem, qe *store.QuotaError, retry int) {
	p.Type = quotaExceededType
	p.RetryAfterSeconds = retry
	p.Quota, p.Scope, p.Subject = qe.Quota, qe.Subject.Kind, qe.Subject.Name
	limit, used := json.Number(itoa(qe.Limit)), json.Number(itoa(qe.Used))
	if qe.Quota == container.QuotaCPUs {
		limit, used = json.Number(container.FormatCPU(qe.Limit)), json.Number(container.FormatCPU(qe.Used))
	}
	p.Limit, p.Used = limit, used
}
