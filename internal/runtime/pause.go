package runtime

import (
	"context"
	"errors"

	"github.com/berth-io/berth/internal/container"
)

// ErrNotSupported is an operation the runtime has no way to carry out at all
// (a Kubernetes Pod cannot be paused). It is not one of the five kinds a
// worker retries on: no retry makes the operation appear; the API refuses
// such a request before anything is written (container.RuntimePauses), and
// a worker that meets it anyway drops the request without failing the
// instance.
var ErrNotSupported = errors.New("not supported by this runtime")

// Pauser is implemented by every runtime. Pause freezes the processes of
// ref's running container where they are, their memory kept (Docker: the
// engine's cgroup freezer), and Resume lets a paused one carry on from
// there. Pause of a paused container and Resume of a running one succeed
// (idempotent, as every call of Runtime); either on a container that is not
// running (created, exited) is ErrConflict, on a missing one ErrNotFound. A
// runtime that cannot pause (container.RuntimePauses false for its kind)
// answers both with ErrNotSupported, naming itself. A paused container
// stays PhasePaused in Inspect and List until it is resumed, stopped
// (Stop of a paused container stops it as a running one, its stop signal
// delivered) or deleted.
type Pauser interface {
	Pause(ctx context.Context, ref Ref) error
	Resume(ctx context.Context, ref Ref) error
}

// Pause pauses inst's container through its runtime's Pauser (the Pauser
// contract, addressed by instance). A runtime without one is
// ErrNotSupported.
func (r *Resolver) Pause(ctx context.Context, inst container.Instance) error {
	p, err := r.pauser(inst, "pause")
	if err != nil {
		return err
	}
	return p.Pause(ctx, RefOf(inst))
}

// Resume resumes inst's paused container through its runtime's Pauser.
func (r *Resolver) Resume(ctx context.Context, inst container.Instance) error {
	p, err := r.pauser(inst, "resume")
	if err != nil {
		return err
	}
	return p.Resume(ctx, RefOf(inst))
}

func (r *Resolver) pauser(inst container.Instance, op string) (Pauser, error) {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return nil, err
	}
	p, ok := rt.(Pauser)
	if !ok {
		return nil, Errorf(ErrNotSupported, op, inst.ID, inst.RuntimeNodeName, "the %s runtime cannot pause a container", rt.Kind())
	}
	return p, nil
}
