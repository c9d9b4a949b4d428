package store

import (
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// WriteKind is what an instance write does to the instance itself.
type WriteKind int

// The kinds of instance write.
const (
	WriteCreate WriteKind = iota + 1
	WriteTransition
	WriteDelete
)

// Write is one instance write (CreateInstance, Transition, DeleteInstance)
// as shared code describes it, so that every backend commits the same
// write: PlanCreate, PlanTransition and PlanDelete set the fields the store
// owns and let each rule add its parts; a backend then commits the
// instance, the event and every part in one transaction, each part through
// its applier, and nothing else.
type Write struct {
	Kind WriteKind
	// At is the write's time: the instance's UpdatedAt and every default
	// time of what the write adds.
	At time.Time
	// Prior is the instance as read before a transition or a delete (the
	// write is conditional on it); zero for a create.
	Prior container.Instance
	// Instance is the instance as the write leaves it, with Version,
	// EventSeq, Status and UpdatedAt set. For a delete it is Prior numbered
	// to its final event: what the removal's deliveries report.
	Instance container.Instance
	// Event is the event the write appends, numbered Instance.EventSeq;
	// nil for none.
	Event *container.Event
	// Parts are what the rules add, in the order of rules.
	Parts []Part
}

// CheckTransition refuses a status change the table forbids (To == From is
// a field-only update). It needs no data, so backends call it before they
// read the instance.
func CheckTransition(p TransitionParams) error {
	if p.To == p.From {
		return nil
	}
	return fsm.Check(p.From, p.To)
}

// PlanCreate checks p and describes the create (see PrepareInstance for
// the instance's rules). Errors wrap ErrInvalidParams.
func PlanCreate(p CreateParams, now time.Time) (*Write, error) {
	in, err := prepareInstance(p.Instance, now)
	if err != nil {
		return nil, err
	}
	ev := FillEvent(p.Event, in.ID, in.EventSeq, now)
	w := &Write{Kind: WriteCreate, At: now, Instance: in, Event: &ev}
	return w, w.follow(func(r rule) error { return r.create(w, p) })
}

// PlanTransition describes p applied to cur, the instance as read: the
// change is refused (ErrConflict) unless cur is still at p.ExpectVersion
// and p.From. The fields the store owns win over whatever p.Update did, so
// the indexes and the event numbering stay true.
func PlanTransition(p TransitionParams, cur container.Instance, now time.Time) (*Write, error) {
	if cur.Version != p.ExpectVersion || cur.Status != p.From {
		return nil, fmt.Errorf("instance %s is at version %d status %s, caller expected version %d status %s: %w",
			p.ID, cur.Version, cur.Status, p.ExpectVersion, p.From, ErrConflict)
	}
	next := cur.Clone()
	next.Status = p.To
	if p.Update != nil {
		p.Update(&next)
	}
	next.ID, next.Owner, next.Status = cur.ID, cur.Owner, p.To
	next.Version, next.EventSeq, next.UpdatedAt = cur.Version+1, cur.EventSeq, now
	w := &Write{Kind: WriteTransition, At: now, Prior: cur, Instance: next}
	if p.Event != nil {
		w.Instance.EventSeq++
		ev := FillEvent(*p.Event, next.ID, w.Instance.EventSeq, now)
		w.Event = &ev
	}
	return w, w.follow(func(r rule) error { return r.transition(w, p) })
}

// PlanDelete describes the removal of cur, the instance as read; refused
// (ErrConflict) unless cur is still at p.ExpectVersion. Its event is the
// instance's last.
func PlanDelete(p DeleteParams, cur container.Instance, now time.Time) (*Write, error) {
	if cur.Version != p.ExpectVersion {
		return nil, fmt.Errorf("instance %s is at version %d, caller expected %d: %w",
			p.ID, cur.Version, p.ExpectVersion, ErrConflict)
	}
	w := &Write{Kind: WriteDelete, At: now, Prior: cur, Instance: cur.Clone()}
	w.Instance.EventSeq++
	ev := FillEvent(p.Event, cur.ID, w.Instance.EventSeq, now)
	w.Event = &ev
	return w, w.follow(func(r rule) error { return r.remove(w, p) })
}

// follow lets every rule add its parts to w.
func (w *Write) follow(each func(rule) error) error {
	for _, r := range rules {
		if err := each(r); err != nil {
			return fmt.Errorf("instance %q: %w", w.Instance.ID, err)
		}
	}
	return nil
}

// add appends a rule's part.
func (w *Write) add(p Part) { w.Parts = append(w.Parts, p) }
