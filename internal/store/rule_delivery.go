package store

import "github.com/berth-io/berth/internal/container"

// deliveryRule: the webhook deliveries of a change ride on its write, each
// reporting the instance as the write leaves it (for a removal: as last
// stored, numbered to its final event).
type deliveryRule struct{}

func (deliveryRule) create(w *Write, p CreateParams) error { return w.addDeliveries(p.Deliveries) }

func (deliveryRule) transition(w *Write, p TransitionParams) error {
	return w.addDeliveries(p.Deliveries)
}

func (deliveryRule) remove(w *Write, p DeleteParams) error { return w.addDeliveries(p.Deliveries) }

func (w *Write) addDeliveries(ds []container.OutboxItem) error {
	for _, d := range ds {
		if err := w.addOutbox(d, true); err != nil {
			return err
		}
	}
	return nil
}
