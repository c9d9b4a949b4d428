package container

import (
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// ReasonRetentionReached is the status reason (and the event message) of
// the delete berth asks for when an ended instance's retention is reached.
const ReasonRetentionReached = "retention reached"

// Retention is how long an instance may stay ended before berth deletes
// it: Stopped for a stopped one, Failed for a failed one, each counted
// from the moment it became so (a start ends the count). Durations as
// ParseDuration reads them; an empty one keeps such instances until
// someone deletes them.
type Retention struct {
	Stopped string `json:"stopped,omitempty"`
	Failed  string `json:"failed,omitempty"`
}

// IsZero reports whether r keeps every ended instance.
func (r Retention) IsZero() bool { return r == Retention{} }

// For is how long an instance in status s is kept under r: 0 (kept until
// deleted) for an active status or one r leaves empty. r was validated
// when it was stored.
func (r *Retention) For(s fsm.Status) time.Duration {
	if r == nil {
		return 0
	}
	var d string
	switch s {
	case fsm.Stopped:
		d = r.Stopped
	case fsm.Failed:
		d = r.Failed
	}
	if d == "" {
		return 0
	}
	v, err := ParseDuration(d)
	if err != nil {
		return 0
	}
	return v
}

// Clone returns a copy.
func (r *Retention) Clone() *Retention {
	if r == nil {
		return nil
	}
	out := *r
	return &out
}

// Deadline is the next time berth may act on the instance by itself, nil
// for none: while it is ended (stopped or failed), its DeleteAt; while it
// is active, the sooner of its ExpiresAt and its RestartAt (an expiry that
// finds it being stopped or deleted does nothing: see manager.Expire). An
// ended instance's expires_at is no deadline: a lifetime bounds a live
// instance only. Stores index instances by it
// (store.InstanceStore.ListDeadlines).
func (in Instance) Deadline() *time.Time {
	if in.Status.Terminal() {
		return in.DeleteAt
	}
	if in.RestartAt != nil && (in.ExpiresAt == nil || in.RestartAt.Before(*in.ExpiresAt)) {
		return in.RestartAt
	}
	return in.ExpiresAt
}
