package runtime

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/container"
)

// Resolver picks the Runtime for an instance or template by its runtime kind
// (`runtime: docker | kubernetes`), and the node through that runtime's
// placement.
type Resolver struct {
	byKind map[string]Runtime
}

// NewResolver registers the runtimes berth has; two of one kind is an error.
func NewResolver(rts ...Runtime) (*Resolver, error) {
	r := &Resolver{byKind: make(map[string]Runtime, len(rts))}
	for _, rt := range rts {
		k := rt.Kind()
		if _, dup := r.byKind[k]; dup {
			return nil, fmt.Errorf("runtime resolver: two runtimes of kind %q", k)
		}
		r.byKind[k] = rt
	}
	return r, nil
}

// Kind returns the runtime registered for kind. An empty kind means Docker,
// the runtime of the local all-in-one; an unknown or unconfigured kind is
// ErrInvalid, since retrying cannot make it appear.
func (r *Resolver) Kind(kind string) (Runtime, error) {
	if kind == "" {
		kind = container.RuntimeDocker
	}
	rt, ok := r.byKind[kind]
	if !ok {
		return nil, Errorf(ErrInvalid, "resolve", "", "", "no %q runtime is configured", kind)
	}
	return rt, nil
}

// ForTemplate returns the runtime a template's containers run on.
func (r *Resolver) ForTemplate(t container.Template) (Runtime, error) { return r.Kind(t.Runtime) }

// ForInstance returns the runtime of an instance: its frozen spec's kind,
// else the kind recorded on the instance.
func (r *Resolver) ForInstance(inst container.Instance) (Runtime, error) {
	kind := inst.Spec.Runtime
	if kind == "" {
		kind = inst.Runtime
	}
	return r.Kind(kind)
}

// Place returns the runtime and node for an instance: the node it already
// has, or the one its runtime's placement chooses now. The caller records
// the node before or with Create, so placement is decided once.
func (r *Resolver) Place(ctx context.Context, inst container.Instance) (Runtime, string, error) {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return nil, "", err
	}
	if inst.RuntimeNodeName != "" {
		return rt, inst.RuntimeNodeName, nil
	}
	node, err := rt.Place(ctx, inst)
	if err != nil {
		return nil, "", err
	}
	return rt, node, nil
}

// Logs reads what inst's container printed, through its runtime's
// LogReader (the LogReader contract, addressed by instance). A runtime
// that cannot read logs is ErrInvalid.
func (r *Resolver) Logs(ctx context.Context, inst container.Instance, opts LogOptions, fn func(LogLine) error) error {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return err
	}
	lr, ok := rt.(LogReader)
	if !ok {
		return Errorf(ErrInvalid, "logs", inst.ID, inst.RuntimeNodeName, "the %s runtime cannot read logs", rt.Kind())
	}
	return lr.Logs(ctx, RefOf(inst), opts, fn)
}
