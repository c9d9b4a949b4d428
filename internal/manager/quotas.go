package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ErrQuotaExceeded (429) is the store's: matched by every
// *store.QuotaError, which names the quota, its limit and the use.
var ErrQuotaExceeded = store.ErrQuotaExceeded

// MaxQuotaName is the longest user or team name an override may have: a
// JWT subject's bound (lambdahttp.MaxSubject).
const MaxQuotaName = 255

// QuotaStanding is one subject's quotas as GET /api/quotas/me shows them:
// the limits in effect (an override's, else the deployment's default),
// whether they are an override's, and the current use.
type QuotaStanding struct {
	Subject  store.QuotaSubject
	Limits   container.QuotaUse
	Override bool
	Used     container.QuotaUse
}

// limitsOf returns the limits in effect for sub, read now so that an
// override takes effect on the next write, and whether an override set them.
func (m *Manager) limitsOf(ctx context.Context, sub store.QuotaSubject) (container.QuotaUse, bool, error) {
	o, err := m.store.GetQuotaOverride(ctx, sub)
	switch {
	case err == nil:
		return o.Limits, true, nil
	case errors.Is(err, store.ErrNotFound):
		return m.quotas, false, nil
	}
	return container.QuotaUse{}, false, fmt.Errorf("reading the quota of %s: %w", sub, err)
}

// quotaLimits are the limits a write for owner (of team) is bounded by:
// one read of the overrides (one document in both stores) gives both.
func (m *Manager) quotaLimits(ctx context.Context, owner, team string) (*store.QuotaLimits, error) {
	all, err := m.store.ListQuotaOverrides(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the quota overrides: %w", err)
	}
	l := store.QuotaLimits{User: m.quotas}
	if team != "" {
		l.Team = m.quotas
	}
	for _, o := range all {
		switch o.Subject {
		case store.QuotaSubject{Kind: store.QuotaUser, Name: owner}:
			l.User = o.Limits
		case store.QuotaSubject{Kind: store.QuotaTeam, Name: team}:
			if team != "" {
				l.Team = o.Limits
			}
		}
	}
	return &l, nil
}

// MyQuotas returns the caller's quotas and, with a team, the team's.
func (m *Manager) MyQuotas(ctx context.Context, c identity.Caller) (QuotaStanding, *QuotaStanding, error) {
	user, err := m.standing(ctx, store.QuotaSubject{Kind: store.QuotaUser, Name: c.User})
	if err != nil || c.Team == "" {
		return user, nil, err
	}
	team, err := m.standing(ctx, store.QuotaSubject{Kind: store.QuotaTeam, Name: c.Team})
	return user, &team, err
}

func (m *Manager) standing(ctx context.Context, sub store.QuotaSubject) (QuotaStanding, error) {
	limits, override, err := m.limitsOf(ctx, sub)
	if err != nil {
		return QuotaStanding{}, err
	}
	used, err := m.store.QuotaUsage(ctx, sub)
	if err != nil {
		return QuotaStanding{}, fmt.Errorf("reading the quota use of %s: %w", sub, err)
	}
	return QuotaStanding{Subject: sub, Limits: limits, Override: override, Used: used}, nil
}

// checkQuotaSubject refuses a caller who is not an admin (ErrForbidden)
// and a name no caller can have (ValidationError).
func checkQuotaSubject(c identity.Caller, sub store.QuotaSubject) error {
	if !c.Admin {
		return fmt.Errorf("quotas are for admins: %w", ErrForbidden)
	}
	if sub.Name == "" || len(sub.Name) > MaxQuotaName || strings.TrimSpace(sub.Name) != sub.Name ||
		strings.IndexFunc(sub.Name, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		var f fields
		f.add(sub.Kind, "must be 1 to %d printable ASCII characters without spaces around", MaxQuotaName)
		return f.err()
	}
	return nil
}

// PutQuota sets sub's override (admins only); limits are checked as
// quotas.default is.
func (m *Manager) PutQuota(ctx context.Context, c identity.Caller, sub store.QuotaSubject, limits container.QuotaLimits) (store.QuotaOverride, error) {
	if err := checkQuotaSubject(c, sub); err != nil {
		return store.QuotaOverride{}, err
	}
	use, err := limits.Parse()
	if err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return store.QuotaOverride{}, &ValidationError{Fields: []FieldError{{Field: field, Message: msg}}}
	}
	o, err := m.store.PutQuotaOverride(ctx, store.QuotaOverride{Subject: sub, Limits: use, UpdatedAt: m.now().UTC()})
	if errors.Is(err, store.ErrInvalidParams) {
		return o, &ValidationError{Fields: []FieldError{{Field: sub.Kind, Message: err.Error()}}}
	}
	return o, err
}

// GetQuota returns sub's override (admins only); ErrNotFound if none.
func (m *Manager) GetQuota(ctx context.Context, c identity.Caller, sub store.QuotaSubject) (store.QuotaOverride, error) {
	if err := checkQuotaSubject(c, sub); err != nil {
		return store.QuotaOverride{}, err
	}
	return m.store.GetQuotaOverride(ctx, sub)
}

// DeleteQuota removes sub's override (admins only): the default applies
// again from the next write. ErrNotFound if there is none.
func (m *Manager) DeleteQuota(ctx context.Context, c identity.Caller, sub store.QuotaSubject) error {
	if err := checkQuotaSubject(c, sub); err != nil {
		return err
	}
	return m.store.DeleteQuotaOverride(ctx, sub)
}

// ListQuotas returns every override (admins only) and the default.
func (m *Manager) ListQuotas(ctx context.Context, c identity.Caller) ([]store.QuotaOverride, container.QuotaUse, error) {
	if !c.Admin {
		return nil, container.QuotaUse{}, fmt.Errorf("quotas are for admins: %w", ErrForbidden)
	}
	l, err := m.store.ListQuotaOverrides(ctx)
	return l, m.quotas, err
}
