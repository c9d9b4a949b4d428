package store

// admissionRule keeps the create admission count exact: a create takes a
// slot (bounded by MaxPending, and by MaxPendingPerOwner of its owner's),
// and leaving pending or creating, by a transition or a delete, releases
// it.
type admissionRule struct{}

func (admissionRule) create(w *Write, p CreateParams) error {
	w.add(Admission{Take: true, Limit: p.MaxPending, Owner: w.Instance.Owner, OwnerLimit: ownerLimit(p)})
	return nil
}

// ownerLimit is the create's bound of its owner's share: none (0) unless
// it is set below the total.
func ownerLimit(p CreateParams) int {
	if p.MaxPendingPerOwner <= 0 || (p.MaxPending > 0 && p.MaxPendingPerOwner >= p.MaxPending) {
		return 0
	}
	return p.MaxPendingPerOwner
}

func (admissionRule) transition(w *Write, _ TransitionParams) error {
	if w.Prior.Status.HoldsCreateSlot() && !w.Instance.Status.HoldsCreateSlot() {
		w.add(Admission{Owner: w.Prior.Owner})
	}
	return nil
}

func (admissionRule) remove(w *Write, _ DeleteParams) error {
	if w.Prior.Status.HoldsCreateSlot() {
		w.add(Admission{Owner: w.Prior.Owner})
	}
	return nil
}
