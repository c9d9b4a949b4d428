package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// ErrInvalidParams is returned when a write's parameters break the contract (an instance
// born in another status than pending, an outbox item for another
// instance…). It is the caller's bug; nothing was written.
var ErrInvalidParams = errors.New("invalid store parameters")

// prepareInstance checks a new instance and fills in what the store owns,
// so every backend accepts and refuses the same creates: it must have an ID
// and be pending (an empty status means pending) at version 1 (0 means 1);
// its EventSeq becomes 1 and empty times now. Errors wrap ErrInvalidParams.
func prepareInstance(in container.Instance, now time.Time) (container.Instance, error) {
	in = in.Clone()
	invalid := func(format string, args ...any) (container.Instance, error) {
		return container.Instance{}, fmt.Errorf("create %q: %s: %w", in.ID, fmt.Sprintf(format, args...), ErrInvalidParams)
	}
	if in.ID == "" {
		return invalid("the instance has no id")
	}
	if in.Status == "" {
		in.Status = fsm.Pending
	}
	if in.Status != fsm.Pending {
		// The admission counter counts creates in flight; an instance born
		// in another status would make it drift.
		return invalid("a new instance must be %s, not %s", fsm.Pending, in.Status)
	}
	if in.Version == 0 {
		in.Version = 1
	}
	if in.Version != 1 {
		return invalid("a new instance must have version 1, not %d", in.Version)
	}
	if in.CreatedAt.IsZero() {
		in.CreatedAt = now
	}
	if in.UpdatedAt.IsZero() {
		in.UpdatedAt = in.CreatedAt
	}
	in.EventSeq = 1
	return in, nil
}

// PrepareOutbox checks an outbox item written with a change that leaves
// the instance as inst (a create, or a transition's new state) and fills in
// its defaults: the item must have an ID, its InstanceID and
// InstanceVersion are inst's when empty and must be otherwise, its state
// is pending and its times now when empty. Errors wrap ErrInvalidParams.
func PrepareOutbox(ob container.OutboxItem, inst container.Instance, now time.Time) (container.OutboxItem, error) {
	if ob.ID == "" {
		return ob, fmt.Errorf("outbox item without an id: %w", ErrInvalidParams)
	}
	if ob.InstanceID == "" {
		ob.InstanceID = inst.ID
	}
	if ob.InstanceVersion == 0 {
		ob.InstanceVersion = inst.Version
	}
	if ob.InstanceID != inst.ID || ob.InstanceVersion != inst.Version {
		return ob, fmt.Errorf("outbox item %q is for %s@%d, not %s@%d: %w",
			ob.ID, ob.InstanceID, ob.InstanceVersion, inst.ID, inst.Version, ErrInvalidParams)
	}
	if ob.State == "" {
		ob.State = container.OutboxPending
	}
	if ob.Owner == "" {
		ob.Owner = inst.Owner
	}
	if ob.CreatedAt.IsZero() {
		ob.CreatedAt = now
	}
	if ob.UpdatedAt.IsZero() {
		ob.UpdatedAt = ob.CreatedAt
	}
	if ob.Delivery != nil && ob.Delivery.Group == nil {
		// The change as this write leaves the instance: its event's
		// number and the instance as the API shows it. A group finish's
		// delivery only rides on the write and reports the group.
		d := *ob.Delivery
		snap := inst.Clone()
		d.Seq, d.Instance = inst.EventSeq, &snap
		if d.Reason == "" {
			d.Reason = inst.StatusReason
		}
		ob.Delivery = &d
	}
	return ob, nil
}

// FillEvent sets what the store owns on an event it appends: the instance,
// the sequence number and, when empty, the time.
func FillEvent(ev container.Event, instanceID string, seq int64, now time.Time) container.Event {
	ev.InstanceID = instanceID
	ev.Seq = seq
	if ev.At.IsZero() {
		ev.At = now
	}
	return ev
}
