package container

import (
	"time"
)

// The restart policies (Restart.Policy).
const (
	RestartNever     = "never"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Defaults of a Restart's fields.
const (
	// DefaultMaxRestarts is Restart.MaxRestarts' default: 3.
	DefaultMaxRestarts = 3
	// DefaultRestartBackoff is Restart.Backoff's default: 1 s.
	DefaultRestartBackoff = time.Second
	// DefaultMaxRestartBackoff is Restart.MaxBackoff's default: 1 min.
	DefaultMaxRestartBackoff = time.Minute
	// MaxRestartBackoff is the longest MaxBackoff a template may set.
	MaxRestartBackoff = time.Hour
)

// Restart is a template's restart policy: a container that exits by
// itself (with a non-zero code, or OOM-killed, for RestartOnFailure; any
// exit for RestartAlways) is started again by berth, up to MaxRestarts
// times since the last start a user asked for (or the create), the n-th
// restart Backoff × 2^(n-1) after the exit, at most MaxBackoff; after the
// last one the instance ends as it would without a policy. Durations as
// ParseDuration reads them; empty fields take the Default… values.
type Restart struct {
	Policy      string `json:"policy"`
	MaxRestarts *int   `json:"max_restarts,omitempty"`
	Backoff     string `json:"backoff,omitempty"`
	MaxBackoff  string `json:"max_backoff,omitempty"`
}

// Clone returns a deep copy.
func (r *Restart) Clone() *Restart {
	if r == nil {
		return nil
	}
	out := *r
	if r.MaxRestarts != nil {
		n := *r.MaxRestarts
		out.MaxRestarts = &n
	}
	return &out
}

// Limit is how many restarts r allows.
func (r *Restart) Limit() int {
	switch {
	case r == nil || r.Policy == "" || r.Policy == RestartNever:
		return 0
	case r.MaxRestarts == nil:
		return DefaultMaxRestarts
	}
	return *r.MaxRestarts
}

// Answers reports whether r restarts a container that exited with code
// (nil: unknown) or was OOM-killed: any exit under RestartAlways, a
// failure under RestartOnFailure.
func (r *Restart) Answers(code *int, oomKilled bool) bool {
	if r == nil {
		return false
	}
	switch r.Policy {
	case RestartAlways:
		return true
	case RestartOnFailure:
		return oomKilled || code == nil || *code != 0
	}
	return false
}

// Delay is how long after an exit the n-th restart (1, 2, …) comes:
// Backoff doubled n-1 times, at most MaxBackoff. r was validated when its
// template was stored.
func (r *Restart) Delay(n int) time.Duration {
	base, limit := DefaultRestartBackoff, DefaultMaxRestartBackoff
	if r != nil && r.Backoff != "" {
		base, _ = ParseDuration(r.Backoff)
	}
	if r != nil && r.MaxBackoff != "" {
		limit, _ = ParseDuration(r.MaxBackoff)
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
