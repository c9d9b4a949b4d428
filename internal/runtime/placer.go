package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
)

// Node is a node as placement filters it: a Docker host or a Kubernetes
// cluster, with what scheduling.host_labels and bind mounts are matched
// against.
type Node interface {
	Candidate
	// NodeLabels are the node's configured labels.
	NodeLabels() map[string]string
	// NodeRoots are the host paths the node lets bind mounts come from.
	NodeRoots() []string
}

// Placer is the placement every runtime shares: the node an instance is
// pinned to, the nodes it may go to, the least-loaded of them with room,
// and the adoption of an object an earlier attempt made. A runtime fills
// in how to name, count and search its nodes; the rules are here, once.
//
// Loads come from a view shared by the process's placements (loadView):
// one listing of every node, reused for ViewTTL, plus what this process
// placed since. A create lists nothing while the view is fresh, and looks
// for an earlier attempt's object only when one may exist
// (MayHaveObject). Safe for concurrent use.
type Placer[N Node, O any] struct {
	// Kind names the nodes in errors ("docker host").
	Kind string
	// Nodes are the runtime's nodes in config order: ties go to the first.
	Nodes []N
	// Named returns the node a recorded runtime_node_name names, or an
	// ErrInvalid error when none is configured.
	Named func(op, instanceID, recorded string) (N, error)
	// Count is how many of berth's objects (of this runtime's scope) hold
	// a place on node: its active ones, as of a read that began no earlier
	// than the call (a view refresh counts on it holding every object
	// made before). An error means the node did not answer.
	Count func(ctx context.Context, node N) (int, error)
	// Find returns instanceID's object on node, nil when it has none; an
	// error means the node did not answer.
	Find func(ctx context.Context, node N, instanceID string) (*O, error)
	// ObjectNode names where an adopted object lives, when that is more
	// precise than the node (a Pod's cluster/node); nil means the node.
	ObjectNode func(node N, obj *O) string
	// ViewTTL is how long one listing of the nodes' loads is reused.
	// Defaults to DefaultViewTTL.
	ViewTTL time.Duration
	// PlaceHold is how long a place Place chose counts while no Create
	// has taken it up. Defaults to DefaultPlaceHold.
	PlaceHold time.Duration
	// Now is the clock of the view. Defaults to time.Now.
	Now func() time.Time

	view loadView
}

// Place is runtime.Runtime.Place: the recorded node when the instance has
// one (checked to still take it), else the node holding an earlier
// attempt's object, or the one Choose picks. The place chosen counts in
// the view until the instance's Create on that node has made its object
// (ForCreate takes it up).
func (p *Placer[N, O]) Place(ctx context.Context, inst container.Instance) (string, error) {
	if inst.RuntimeNodeName != "" {
		if _, err := p.Pinned(inst); err != nil {
			return "", err
		}
		return inst.RuntimeNodeName, nil
	}
	c, pl, err := p.choose(ctx, inst)
	if err != nil {
		return "", err
	}
	if c.Existing != nil {
		if p.ObjectNode != nil {
			return p.ObjectNode(c.Node, c.Existing), nil
		}
		return c.Node.NodeName(), nil
	}
	p.view.mu.Lock()
	p.view.remember(pl)
	p.view.mu.Unlock()
	return c.Node.NodeName(), nil
}

// ForCreate is the opening of every Create: the pinned node when the
// instance has one (Create never moves it), else Choose's answer. The
// caller adopts Existing when set and calls Release once the object is
// made (or not).
func (p *Placer[N, O]) ForCreate(ctx context.Context, inst container.Instance) (Choice[N, O], error) {
	if inst.RuntimeNodeName != "" {
		n, err := p.Pinned(inst)
		if err != nil {
			return Choice[N, O]{}, err
		}
		return Choice[N, O]{Node: n, Release: p.view.take(inst.ID, n.NodeName(), p.now)}, nil
	}
	return p.Choose(ctx, inst)
}

// Pinned is the node an instance already has, checked to still take it:
// configured, and allowing every bind source of the spec.
func (p *Placer[N, O]) Pinned(inst container.Instance) (N, error) {
	n, err := p.Named("place", inst.ID, inst.RuntimeNodeName)
	if err != nil {
		return n, err
	}
	if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, n.NodeRoots()); err != nil {
		var zero N
		return zero, NewError(ErrInvalid, "place", inst.ID, n.NodeName(), err)
	}
	return n, nil
}

// Choose places an instance that has no node: an earlier attempt's object
// when one may exist (MayHaveObject) and a candidate holds it, else the
// least-loaded candidate with room by the view. Release ends the place.
func (p *Placer[N, O]) Choose(ctx context.Context, inst container.Instance) (Choice[N, O], error) {
	c, pl, err := p.choose(ctx, inst)
	if err != nil || c.Existing != nil {
		return c, err
	}
	p.view.mu.Lock()
	pl.taken = true
	p.view.mu.Unlock()
	var once sync.Once
	c.Release = func() { once.Do(func() { p.view.end(pl, p.now()) }) }
	return c, nil
}

// choose is Choose without the Release: the place chosen, or the object
// adopted (then no place).
func (p *Placer[N, O]) choose(ctx context.Context, inst container.Instance) (Choice[N, O], *place, error) {
	cands, err := p.Candidates(inst)
	if err != nil {
		return Choice[N, O]{}, nil, err
	}
	var errs []error
	if MayHaveObject(inst) {
		var found Choice[N, O]
		if found, errs = p.find(ctx, cands, inst.ID); found.Existing != nil {
			return found, nil, nil
		}
		if len(errs) == len(cands) {
			return Choice[N, O]{}, nil, p.noneAnswered(inst.ID, errs)
		}
	}
	if len(cands) == 1 && cands[0].NodeCapacity() == 0 {
		// Nothing to compare and no room to check: no listing. One
		// lookup of the instance's object (made above when one may
		// exist) tells that the node answers, so that an instance whose
		// only node is down stays pending, as it does when every one of
		// several is down, rather than being claimed for a node that
		// cannot make it.
		if !MayHaveObject(inst) {
			if _, err := p.Find(ctx, cands[0], inst.ID); err != nil {
				return Choice[N, O]{}, nil, p.noneAnswered(inst.ID, []error{err})
			}
		}
		p.view.mu.Lock()
		defer p.view.mu.Unlock()
		return Choice[N, O]{Node: cands[0], Release: func() {}}, p.view.add(cands[0].NodeName(), inst.ID, p.now()), nil
	}
	return p.leastLoaded(ctx, inst.ID, cands)
}

// find looks for instanceID's object on every candidate at once: the
// object and its node when one holds it, and the errors of those that did
// not answer.
func (p *Placer[N, O]) find(ctx context.Context, cands []N, instanceID string) (Choice[N, O], []error) {
	objs := make([]*O, len(cands))
	errs := make([]error, len(cands))
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Go(func() { objs[i], errs[i] = p.Find(ctx, c, instanceID) })
	}
	wg.Wait()
	var failed []error
	for i, obj := range objs {
		if obj != nil {
			return Choice[N, O]{Node: cands[i], Existing: obj, Release: func() {}}, nil
		}
		if errs[i] != nil {
			failed = append(failed, errs[i])
		}
	}
	return Choice[N, O]{}, failed
}

// leastLoaded takes the candidate with the fewest active objects by the
// view, among those that answered its listing and have room, and counts a
// place there. No candidate answering, or every one full, is
// ErrUnavailable: a retry may find room.
func (p *Placer[N, O]) leastLoaded(ctx context.Context, instanceID string, cands []N) (Choice[N, O], *place, error) {
	l, err := p.lockView(ctx)
	if err != nil {
		return Choice[N, O]{}, nil, NewError(ErrUnavailable, "place", instanceID, "",
			fmt.Errorf("waiting for the loads of the %ss: %w", p.Kind, err))
	}
	v := &p.view
	defer v.mu.Unlock()
	var errs []error
	best, bestLoad := -1, 0
	for i, c := range cands {
		name := c.NodeName()
		if err := l.errs[name]; err != nil {
			errs = append(errs, err)
			continue
		}
		n := l.active[name] + v.placed[name]
		if capacity := c.NodeCapacity(); capacity > 0 && n >= capacity {
			continue
		}
		if best < 0 || n < bestLoad {
			best, bestLoad = i, n
		}
	}
	if best < 0 {
		if len(errs) == len(cands) {
			return Choice[N, O]{}, nil, p.noneAnswered(instanceID, errs)
		}
		return Choice[N, O]{}, nil, Errorf(ErrUnavailable, "place", instanceID, "",
			"every matching %s that answered is full (%s)", p.Kind, nodeNames(cands))
	}
	return Choice[N, O]{Node: cands[best], Release: func() {}}, v.add(cands[best].NodeName(), instanceID, p.now()), nil
}

// Candidates are the nodes whose labels include every
// scheduling.host_labels pair and whose roots admit every bind source.
// None is ErrInvalid: no retry makes a node appear.
func (p *Placer[N, O]) Candidates(inst container.Instance) ([]N, error) {
	want := inst.Spec.Scheduling.HostLabels
	var labelled []N
	for _, n := range p.Nodes {
		if HasLabels(n.NodeLabels(), want) {
			labelled = append(labelled, n)
		}
	}
	if len(labelled) == 0 {
		return nil, Errorf(ErrInvalid, "place", inst.ID, "", "no %s has the labels %v", p.Kind, SortedPairs(want))
	}
	var out []N
	var firstErr error
	for _, n := range labelled {
		if err := hostpolicy.HostPathsAllowed(inst.Spec.Volumes, n.NodeRoots()); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s %s: %w", p.Kind, n.NodeName(), err)
			}
			continue
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, NewError(ErrInvalid, "place", inst.ID, "", firstErr)
	}
	return out, nil
}

// noneAnswered is placement's answer when no candidate answered: errs,
// one per candidate, as ErrUnavailable (a retry may find one up).
func (p *Placer[N, O]) noneAnswered(instanceID string, errs []error) error {
	return NewError(ErrUnavailable, "place", instanceID, "",
		fmt.Errorf("no matching %s answered: %w", p.Kind, errors.Join(errs...)))
}
