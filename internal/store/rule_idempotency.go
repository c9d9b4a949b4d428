package store

// idempotencyRule: a create's idempotency record commits with it, so a
// repeat finds either both or neither.
type idempotencyRule struct{ noRule }

func (idempotencyRule) create(w *Write, p CreateParams) error {
	if p.Idempotency == nil {
		return nil
	}
	rec := *p.Idempotency
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = w.At
	}
	w.add(SaveIdempotency{Record: rec})
	return nil
}
