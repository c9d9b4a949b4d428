package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// DefaultUsageDays is how far back GET /api/usage reaches without from:
// from defaults to 30 days before to, to to the next whole UTC hour.
const DefaultUsageDays = 30

// usageItemBody is one row of GET /api/usage.
type usageItemBody struct {
	Key              string  `json:"key"`
	RunningSeconds   int64   `json:"running_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	MemoryGiBSeconds float64 `json:"memory_gib_seconds"`
	Creates          int64   `json:"creates"`
	Failures         int64   `json:"failures"`
}

// usageBody is GET /api/usage's answer.
type usageBody struct {
	From    time.Time       `json:"from"`
	To      time.Time       `json:"to"`
	GroupBy string          `json:"group_by"`
	Items   []usageItemBody `json:"items"`
}

// getUsage is GET /api/usage?from=&to=&group_by=&owner=&team=: the
// caller's usage, or (admins) owner's or team's.
func (h *handler) getUsage(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	q, err := usageQuery(r, c, time.Now())
	if err != nil {
		return err
	}
	items, err := h.m.Usage(r.Context(), c, q)
	var bad *store.UsageParamError
	if errors.As(err, &bad) {
		return &badRequest{msg: "invalid query parameters: " + bad.Message, fields: fieldErr(bad.Field, bad.Message)}
	}
	if err != nil {
		return err
	}
	body := usageBody{From: q.From, To: q.To, GroupBy: q.GroupBy, Items: make([]usageItemBody, len(items))}
	for i, it := range items {
		body.Items[i] = usageItemBody{Key: it.Key, RunningSeconds: it.RunningSeconds, CPUSeconds: float64(it.CPUMilliSeconds) / 1000,
			MemoryGiBSeconds: it.Memory.GiBSeconds(), Creates: it.Creates, Failures: it.Failures}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// usageQuery reads the query string: RFC 3339 times, the subject (the
// caller unless owner or team names another), group_by (default day).
func usageQuery(r *http.Request, c identity.Caller, now time.Time) (store.UsageQuery, error) {
	v := r.URL.Query()
	q := store.UsageQuery{Subject: store.QuotaSubject{Kind: store.QuotaUser, Name: c.User}, GroupBy: v.Get("group_by")}
	if q.GroupBy == "" {
		q.GroupBy = store.UsageByDay
	}
	var bad []manager.FieldError
	parse := func(name string, def time.Time) time.Time {
		s := v.Get(name)
		if s == "" {
			return def
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad = append(bad, manager.FieldError{Field: name, Message: "must be an RFC 3339 time, e.g. 2026-12-01T00:00:00Z"})
		}
		return t.UTC()
	}
	q.To = parse("to", now.UTC().Truncate(time.Hour).Add(time.Hour))
	q.From = parse("from", q.To.AddDate(0, 0, -DefaultUsageDays))
	owner, team := v.Get("owner"), v.Get("team")
	switch {
	case owner != "" && team != "":
		bad = append(bad, manager.FieldError{Field: "team", Message: "give owner or team, not both"})
	case owner != "":
		q.Subject.Name = owner
	case team != "":
		q.Subject = store.QuotaSubject{Kind: store.QuotaTeam, Name: team}
	}
	if len(bad) > 0 {
		return q, &badRequest{msg: "invalid query parameters", fields: bad}
	}
	return q, nil
}
