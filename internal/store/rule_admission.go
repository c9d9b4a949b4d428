package store

// admissionRule keeps the create admission count exact: a create takes a
// slot (bounded by MaxPending), and leaving pending or creating, by a
// transition or a delete, releases it.
type admissionRule struct{}

func (admissionRule) create(w *Write, p CreateParams) error {
	w.add(Admission{Take: true, Limit: p.MaxPending})
	return nil
}

func (admissionRule) transition(w *Write, _ TransitionParams) error {
	if w.Prior.Status.HoldsCreateSlot() && !w.Instance.Status.HoldsCreateSlot() {
		w.add(Admission{})
	}
	return nil
}

func (admissionRule) remove(w *Write, _ DeleteParams) error {
	if w.Prior.Status.HoldsCreateSlot() {
		w.add(Admission{})
	}
	return nil
}
