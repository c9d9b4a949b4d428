package store

import "github.com/berth-io/berth/internal/container"

// quotaRule keeps every owner's and team's quota use exact (no counting
// pass): a create reserves what its instance holds (an instance, a pending
// create, a run with its template's CPU and memory), every status change
// reserves or releases the difference between what the instance held
// before and after (container.Reserved of prior and new status), and a
// delete releases what the instance still held. It keys off the prior and
// the new status, which the write is conditional on, so a redelivered or
// repeated transition (refused as a conflict, or a field-only update)
// neither doubles nor leaks a reservation. The limits, when the caller
// gives them, bound only what a write grows.
type quotaRule struct{}

func (quotaRule) create(w *Write, p CreateParams) error {
	w.Instance.QuotaCounted = true
	reserve(w, container.QuotaUse{}, container.Reserved(w.Instance.Status, w.Instance.Spec.Resources), p.Quota)
	return nil
}

func (quotaRule) transition(w *Write, p TransitionParams) error {
	// What the rule keys on is the store's, not the caller's Update.
	w.Instance.Team, w.Instance.QuotaCounted = w.Prior.Team, w.Prior.QuotaCounted
	if !w.Prior.QuotaCounted || w.Prior.Status == w.Instance.Status {
		return nil
	}
	res := w.Prior.Spec.Resources
	reserve(w, container.Reserved(w.Prior.Status, res), container.Reserved(w.Instance.Status, res), p.Quota)
	return nil
}

func (quotaRule) remove(w *Write, _ DeleteParams) error {
	if w.Prior.QuotaCounted {
		reserve(w, container.Reserved(w.Prior.Status, w.Prior.Spec.Resources), container.QuotaUse{}, nil)
	}
	return nil
}

// reserve adds the parts that move the owner's and the team's use from
// before to after, bounded by limits when set.
func reserve(w *Write, before, after container.QuotaUse, limits *QuotaLimits) {
	delta := container.QuotaUse{
		Instances:   after.Instances - before.Instances,
		Running:     after.Running - before.Running,
		Pending:     after.Pending - before.Pending,
		CPUMillis:   after.CPUMillis - before.CPUMillis,
		MemoryBytes: after.MemoryBytes - before.MemoryBytes,
	}
	if delta.IsZero() {
		return
	}
	var user, team container.QuotaUse
	if limits != nil {
		user, team = limits.User, limits.Team
	}
	w.add(QuotaReserve{Subject: QuotaSubject{Kind: QuotaUser, Name: w.Instance.Owner}, Delta: delta, Limit: user})
	if w.Instance.Team != "" {
		w.add(QuotaReserve{Subject: QuotaSubject{Kind: QuotaTeam, Name: w.Instance.Team}, Delta: delta, Limit: team})
	}
}
