package container

import "fmt"

// DeliveryKind is what a delivery reports, whichever channel carries it:
// each channel names the kinds in its own words (a webhook's event type,
// an EventBridge detail-type), from this one decision.
type DeliveryKind string

// The kinds of delivery.
const (
	DeliveryCreated       DeliveryKind = "created"        // an instance was made (no From)
	DeliveryStatusChanged DeliveryKind = "status_changed" // it moved from one status to another
	DeliveryDeleted       DeliveryKind = "deleted"        // it is gone (no To)
	DeliveryGroupFinished DeliveryKind = "group_finished" // a group finished (Group set)
)

// DeliveryKinds are every kind, in the order above: a channel's table of
// names is checked against it, so that a new kind cannot go unnamed.
var DeliveryKinds = []DeliveryKind{DeliveryCreated, DeliveryStatusChanged, DeliveryDeleted, DeliveryGroupFinished}

// Kind is what d reports.
func (d Delivery) Kind() DeliveryKind {
	switch {
	case d.Group != nil:
		return DeliveryGroupFinished
	case d.To == "":
		return DeliveryDeleted
	case d.From == "":
		return DeliveryCreated
	}
	return DeliveryStatusChanged
}

// CheckKindNames checks a channel's names for the delivery kinds: every
// kind named, no two kinds with one name, no name for a kind that is not
// one. A channel's test calls it, so that a new kind cannot go unnamed.
func CheckKindNames(names map[DeliveryKind]string) error {
	seen := map[string]DeliveryKind{}
	for _, k := range DeliveryKinds {
		name := names[k]
		if name == "" {
			return fmt.Errorf("delivery kind %q has no name", k)
		}
		if other, dup := seen[name]; dup {
			return fmt.Errorf("delivery kinds %q and %q share the name %q", other, k, name)
		}
		seen[name] = k
	}
	if len(names) != len(DeliveryKinds) {
		return fmt.Errorf("%d names for %d delivery kinds", len(names), len(DeliveryKinds))
	}
	return nil
}
