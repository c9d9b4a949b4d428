package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// ErrQuotaExceeded is matched (errors.Is) by every *QuotaError: a create
// or start would take an owner or a team above one of its quotas; nothing
// was written.
var ErrQuotaExceeded = errors.New("quota exceeded")

// The kinds of QuotaSubject.
const (
	QuotaUser = "user"
	QuotaTeam = "team"
)

// QuotaSubject is whose use a quota counts: one user (an instance's owner)
// or one team (every member's instances together).
type QuotaSubject struct {
	// Kind is QuotaUser or QuotaTeam.
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func (s QuotaSubject) String() string { return s.Kind + " " + s.Name }

// Valid reports whether s names a user or a team.
func (s QuotaSubject) Valid() bool {
	return (s.Kind == QuotaUser || s.Kind == QuotaTeam) && s.Name != ""
}

// QuotaError is the refusal of a write that would take Subject's use of
// Quota (one of container.Quotas) above Limit; Used is its use without the
// write (CPU in millicores, memory in bytes).
type QuotaError struct {
	Subject QuotaSubject
	Quota   string
	Limit   int64
	Used    int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s: quota %s: %d used of %d", e.Subject, e.Quota, e.Used, e.Limit)
}

// Is makes errors.Is(err, ErrQuotaExceeded) true.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// QuotaLimits are the limits in effect for one write: the owner's and, if
// the instance has a team, the team's (0: no limit). The caller resolves
// them (an override, else the deployment's default) when it writes, so an
// override takes effect on the next write.
type QuotaLimits struct {
	User container.QuotaUse
	Team container.QuotaUse
}

// Refusal returns the error of a reservation of delta over limit by a
// subject that uses used, or nil if it fits: only the quotas delta grows
// and limit bounds (> 0) are checked, in the order of container.Quotas.
func Refusal(sub QuotaSubject, used, delta, limit container.QuotaUse) error {
	for _, q := range container.Quotas {
		d, l, u := delta.Of(q), limit.Of(q), used.Of(q)
		if d > 0 && l > 0 && u+d > l {
			return &QuotaError{Subject: sub, Quota: q, Limit: l, Used: u}
		}
	}
	return nil
}

// QuotaOverride is an admin's limits for one user or team, used instead of
// the deployment's default (quotas.default).
type QuotaOverride struct {
	Subject   QuotaSubject       `json:"subject"`
	Limits    container.QuotaUse `json:"limits"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// QuotaStore keeps the quota overrides and reads the use the instance
// writes reserve (rule_quota.go).
type QuotaStore interface {
	// PutQuotaOverride creates or replaces the override of o.Subject.
	PutQuotaOverride(ctx context.Context, o QuotaOverride) (QuotaOverride, error)
	// GetQuotaOverride returns the override of sub, or ErrNotFound.
	GetQuotaOverride(ctx context.Context, sub QuotaSubject) (QuotaOverride, error)
	// DeleteQuotaOverride removes the override of sub; ErrNotFound if none.
	DeleteQuotaOverride(ctx context.Context, sub QuotaSubject) error
	// ListQuotaOverrides returns every override, by kind (team, user) then
	// name.
	ListQuotaOverrides(ctx context.Context) ([]QuotaOverride, error)
	// QuotaUsage returns what sub's instances reserve now (zero if none).
	QuotaUsage(ctx context.Context, sub QuotaSubject) (container.QuotaUse, error)
}

// MaxQuotaOverrides bounds the overrides a deployment keeps: they are one
// document (one read gives a create its owner's and its team's), which
// stays far below DynamoDB's 400 KB item at this count.
const MaxQuotaOverrides = 1000

// QuotaOverrideSet is every override as both stores keep it: one versioned
// document, in order of kind then name.
type QuotaOverrideSet struct {
	Version int64           `json:"version"`
	Items   []QuotaOverride `json:"items"`
}

// Get returns sub's override, if there is one.
func (s QuotaOverrideSet) Get(sub QuotaSubject) (QuotaOverride, bool) {
	for _, o := range s.Items {
		if o.Subject == sub {
			return o, true
		}
	}
	return QuotaOverride{}, false
}

// Put adds or replaces o. Errors wrap ErrInvalidParams: a subject that is
// neither a user nor a team, negative limits, or MaxQuotaOverrides reached.
func (s *QuotaOverrideSet) Put(o QuotaOverride) error {
	if !o.Subject.Valid() {
		return fmt.Errorf("quota override of %q: not a user or a team: %w", o.Subject, ErrInvalidParams)
	}
	if l := o.Limits; min(l.Instances, l.Running, l.Pending, l.CPUMillis, l.MemoryBytes) < 0 {
		return fmt.Errorf("quota override of %s: negative limit: %w", o.Subject, ErrInvalidParams)
	}
	i, found := slices.BinarySearchFunc(s.Items, o.Subject, compareSubject)
	switch {
	case found:
		s.Items[i] = o
	case len(s.Items) >= MaxQuotaOverrides:
		return fmt.Errorf("quota override of %s: %d overrides already: %w", o.Subject, MaxQuotaOverrides, ErrInvalidParams)
	default:
		s.Items = slices.Insert(s.Items, i, o)
	}
	return nil
}

// Delete removes sub's override; ErrNotFound if there is none.
func (s *QuotaOverrideSet) Delete(sub QuotaSubject) error {
	i, found := slices.BinarySearchFunc(s.Items, sub, compareSubject)
	if !found {
		return fmt.Errorf("quota override of %s: %w", sub, ErrNotFound)
	}
	s.Items = slices.Delete(s.Items, i, i+1)
	return nil
}

// List returns a copy of the overrides (never nil).
func (s QuotaOverrideSet) List() []QuotaOverride { return append([]QuotaOverride{}, s.Items...) }

func compareSubject(o QuotaOverride, sub QuotaSubject) int {
	if c := strings.Compare(o.Subject.Kind, sub.Kind); c != 0 {
		return c
	}
	return strings.Compare(o.Subject.Name, sub.Name)
}
