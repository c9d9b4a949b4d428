package store

// completionRule: a worker's last step and its outbox bookkeeping commit
// together (CompleteOutboxID).
type completionRule struct{ noRule }

func (completionRule) transition(w *Write, p TransitionParams) error {
	w.complete(p.CompleteOutboxID)
	return nil
}

func (completionRule) remove(w *Write, p DeleteParams) error {
	w.complete(p.CompleteOutboxID)
	return nil
}

func (w *Write) complete(id string) {
	if id != "" {
		w.add(CompleteOutbox{ID: id})
	}
}
