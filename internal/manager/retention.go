package manager

import (
	"context"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// validRetention checks a template's retention: each duration it sets,
// and that it sets one.
func validRetention(f *fields, r *container.Retention) {
	if r == nil {
		return
	}
	if r.IsZero() {
		f.add("retention", "sets neither stopped nor failed")
	}
	for field, d := range map[string]string{"retention.stopped": r.Stopped, "retention.failed": r.Failed} {
		if d == "" {
			continue
		}
		if _, err := container.ParseDuration(d); err != nil {
			f.add(field, "%v", err)
		}
	}
}

// retentionOf is how long instances of t are kept once ended: the
// template's own, else the deployment's; nil: until deleted.
func (m *Manager) retentionOf(t container.Template) *container.Retention {
	if t.Retention != nil {
		return t.Retention.Clone()
	}
	r := container.Retention{Stopped: shortDuration(m.lifetimes.StoppedRetention), Failed: shortDuration(m.lifetimes.FailedRetention)}
	if r.IsZero() {
		return nil
	}
	return &r
}

// shortDuration writes d as a duration ParseDuration reads, without the
// zero units time.Duration.String adds ("24h", not "24h0m0s"); "" for 0.
func shortDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// retentionWrite decides the retention at at of inst as it is now: the
// delete of an instance that stayed ended until its delete_at, through
// the same write as a user's delete, conditional on that delete_at
// (store.TransitionParams.Retention).
func (m *Manager) retentionWrite(ctx context.Context, inst container.Instance, at time.Time) (ExpiryOutcome, *store.TransitionParams) {
	if inst.DeleteAt == nil || !inst.DeleteAt.Equal(at) || (inst.Status != fsm.Stopped && inst.Status != fsm.Failed) {
		return ExpiryMoot, nil
	}
	now := m.now().UTC()
	if now.Before(at) {
		return ExpiryLater, nil
	}
	op := container.OpDelete
	p, _ := requestWrite(ctx, inst, request{op: op, to: opStatuses[op].requested, event: opStatuses[op].requestEvent,
		reason: container.ReasonRetentionReached, actor: container.ActorSystem, at: now})
	ret := at
	p.Retention = &ret
	return ExpiryActed, p
}
