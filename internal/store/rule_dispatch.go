package store

// dispatchRule: a worker's claim carries the dispatch mark of the item it
// claims (DispatchOutboxID), so the local dispatcher need not write it.
// An item the same write completes is only completed: done wins, and one
// action per item keeps a transaction valid.
type dispatchRule struct{ noRule }

func (dispatchRule) transition(w *Write, p TransitionParams) error {
	if p.DispatchOutboxID != "" && p.DispatchOutboxID != p.CompleteOutboxID {
		w.add(DispatchOutbox{ID: p.DispatchOutboxID})
	}
	return nil
}
