package runtime

import (
	"context"
	"fmt"

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
// in how to name, find and load its nodes; the rules are here, once.
type Placer[N Node, O any] struct {
	// Kind names the nodes in errors ("docker host").
	Kind string
	// Nodes are the runtime's nodes in config order: ties go to the first.
	Nodes []N
	// Named returns the node a recorded runtime_node_name names, or an
	// ErrInvalid error when none is configured.
	Named func(op, instanceID, recorded string) (N, error)
	// Load is Choose's load: node's active objects (when count) and
	// instanceID's object, if an earlier attempt made one.
	Load func(ctx context.Context, node N, instanceID string, count bool) Load[O]
	// ObjectNode names where an adopted object lives, when that is more
	// precise than the node (a Pod's cluster/node); nil means the node.
	ObjectNode func(node N, obj *O) string

	reserved Reservations
}

// Place is runtime.Runtime.Place: the recorded node when the instance has
// one (checked to still take it), else the node Choose picks, or the one
// holding an earlier attempt's object.
func (p *Placer[N, O]) Place(ctx context.Context, inst container.Instance) (string, error) {
	if inst.RuntimeNodeName != "" {
		if _, err := p.Pinned(inst); err != nil {
			return "", err
		}
		return inst.RuntimeNodeName, nil
	}
	c, err := p.Choose(ctx, inst)
	if err != nil {
		return "", err
	}
	c.Release()
	if c.Existing != nil && p.ObjectNode != nil {
		return p.ObjectNode(c.Node, c.Existing), nil
	}
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
		return Choice[N, O]{Node: n, Release: func() {}}, nil
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

// Choose places an instance that has no node: among its Candidates, by
// the package's Choose.
func (p *Placer[N, O]) Choose(ctx context.Context, inst container.Instance) (Choice[N, O], error) {
	cands, err := p.Candidates(inst)
	if err != nil {
		return Choice[N, O]{}, err
	}
	return Choose(ctx, &p.reserved, inst.ID, p.Kind, cands, func(ctx context.Context, n N, count bool) Load[O] {
		return p.Load(ctx, n, inst.ID, count)
	})
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
