package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/runtime"
)

// StatsSource reads what an instance's container uses now: berth serve and
// the logs function on AWS make one from their runtimes (the api function
// holds no runtime client, so the route answers 501 there). Its contract is
// runtime.StatsReader's, addressed by instance.
type StatsSource interface {
	Stats(ctx context.Context, inst container.Instance) (runtime.Stats, error)
}

var _ StatsSource = (*runtime.Resolver)(nil)

// containerStats answers GET /api/containers/{id}/stats: one reading taken
// now from the runtime, of a running instance only (a stopped container
// uses nothing, and a starting one has no reading yet).
func (h *handler) containerStats(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	inst, err := h.m.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if h.stats == nil {
		writeProblem(w, r, http.StatusNotImplemented, "Not Implemented",
			"container stats are served by berth serve and by the logs function, not by this deployment's API (see docs/api.md, Stats)", nil)
		return nil
	}
	if inst.Status != fsm.Running {
		return &logsProblem{status: http.StatusConflict, title: "Conflict", current: inst,
			detail: "the container is not running: only a running container has usage to read"}
	}
	s, err := h.stats.Stats(r.Context(), inst)
	if err != nil {
		return statsError(inst, err)
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

// statsError maps a runtime's failure to read usage to the API's errors,
// showing only the kind of failure (a runtime's messages name hosts).
func statsError(inst container.Instance, err error) error {
	switch {
	case errors.Is(err, runtime.ErrNotServed):
		return &logsProblem{status: http.StatusNotImplemented, title: "Not Implemented",
			detail: "this container's runtime serves no usage readings (a Kubernetes cluster without the resource metrics API: install metrics-server)"}
	case runtime.IsNotFound(err), runtime.IsConflict(err):
		return &logsProblem{status: http.StatusConflict, title: "Conflict", current: inst,
			detail: "the container is not running on its runtime now: it has no usage to read"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &logsProblem{status: http.StatusServiceUnavailable, title: "Service Unavailable",
		detail: "the container's runtime did not answer; retry later"}
}
