package store

import "github.com/berth-io/berth/internal/container"

// outboxRule: the write's own request (CreateParams.Outbox, the optional
// TransitionParams.Outbox) is an outbox item for the instance as the write
// leaves it.
type outboxRule struct{ noRule }

func (outboxRule) create(w *Write, p CreateParams) error {
	return w.addOutbox(p.Outbox, false)
}

func (outboxRule) transition(w *Write, p TransitionParams) error {
	if p.Outbox == nil {
		return nil
	}
	return w.addOutbox(*p.Outbox, false)
}

// addOutbox prepares a new item for the instance as w leaves it and adds
// its put: the one way an item joins a write.
func (w *Write) addOutbox(ob container.OutboxItem, delivery bool) error {
	ob, err := PrepareOutbox(ob, w.Instance, w.At)
	if err != nil {
		return err
	}
	w.add(NewOutbox{Item: ob, Delivery: delivery})
	return nil
}
