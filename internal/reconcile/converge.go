package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// Converge brings the container of instance id in line with the instance's
// terminal status at once, as a pass does for the terminal instances it
// finds (terminal): a failed instance's running container is stopped, a
// stopped instance's is recorded as running. berth serve's monitor calls
// it when a container starts while its instance is stopped or failed, so
// that it need not wait for the next pass. An instance that no longer
// exists or is not terminal, or whose container does not run, needs
// nothing. It runs beside passes without their lock: what it does is
// idempotent and checked against the container's live state.
func (r *Reconciler) Converge(ctx context.Context, id string) error {
	inst, err := r.st.GetInstance(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("converging instance %s: %w", id, err)
	case !inst.Status.Terminal():
		return nil
	}
	rt, ok := r.rts[inst.Runtime]
	if !ok {
		return nil
	}
	st, err := rt.Inspect(ctx, runtime.RefOf(inst))
	switch {
	case runtime.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("converging instance %s: inspecting its container: %w", id, err)
	}
	var rep Report
	l := &listing{rt: rt, byInstance: map[string][]runtime.State{id: {st}}, complete: true}
	r.terminal(ctx, r.log.With("op", "converge", "instance_id", id, "status", string(inst.Status)), l, inst, r.now(), &rep)
	if rep.Errors > 0 {
		return fmt.Errorf("converging instance %s: %s", id, strings.Join(rep.ErrorSamples, "; "))
	}
	return nil
}
