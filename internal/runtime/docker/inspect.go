package docker

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

// Inspect reports the container's state, exit code, OOM kill and times,
// and while it runs its endpoints.
func (r *Runtime) Inspect(ctx context.Context, ref runtime.Ref) (runtime.State, error) {
	h, name, err := r.locate(ctx, "inspect", ref)
	if err != nil {
		return runtime.State{}, err
	}
	res, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return runtime.State{}, classify(err, "inspect", ref.InstanceID, h.cfg.Name)
	}
	return withEndpoints(stateFromInspect(h.cfg.Name, res.Container), h.cfg.AdvertisedAddress(), inspectEndpoints(res.Container)), nil
}

// List reports berth's containers (of this scope) on every host, listed in
// parallel; a host that fails leaves its containers out and the error says
// which.
func (r *Runtime) List(ctx context.Context) ([]runtime.State, error) {
	per := make([][]runtime.State, len(r.hosts))
	errs := make([]error, len(r.hosts))
	var wg sync.WaitGroup
	for i, h := range r.hosts {
		wg.Go(func() {
			res, err := h.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: r.filters()})
			if err != nil {
				errs[i] = classify(err, "list", "", h.cfg.Name)
				return
			}
			for _, c := range res.Items {
				per[i] = append(per[i], withEndpoints(stateFromSummary(h.cfg.Name, c), h.cfg.AdvertisedAddress(), summaryEndpoints(c)))
			}
		})
	}
	wg.Wait()
	var out []runtime.State
	for _, s := range per {
		out = append(out, s...)
	}
	return out, errors.Join(errs...)
}

func stateFromInspect(node string, c container.InspectResponse) runtime.State {
	s := runtime.State{
		Ref:  runtime.Ref{Node: node, RuntimeID: c.ID},
		Name: strings.TrimPrefix(c.Name, "/"),
	}
	if c.Config != nil {
		s.Labels = c.Config.Labels
		s.Image = c.Config.Image
		s.InstanceID = c.Config.Labels[runtime.LabelInstanceID]
	}
	s.CreatedAt = parseTime(c.Created)
	if st := c.State; st != nil {
		s.Phase = phaseOf(string(st.Status))
		s.OOMKilled = st.OOMKilled
		s.Error = st.Error
		if t := parseTime(st.StartedAt); !t.IsZero() {
			s.StartedAt = &t
		}
		if t := parseTime(st.FinishedAt); !t.IsZero() {
			s.FinishedAt = &t
		}
		if s.Phase == runtime.PhaseExited || s.Phase == runtime.PhaseDead {
			code := st.ExitCode
			s.ExitCode = &code
		}
	}
	return s
}

// exitedStatus is how the list's human status gives the exit code, the only
// place a listing has it: "Exited (137) 2 seconds ago".
var exitedStatus = regexp.MustCompile(`^Exited \((-?[0-9]+)\)`)

func stateFromSummary(node string, c container.Summary) runtime.State {
	s := runtime.State{
		Ref:       runtime.Ref{InstanceID: c.Labels[runtime.LabelInstanceID], Node: node, RuntimeID: c.ID},
		Phase:     phaseOf(string(c.State)),
		Image:     c.Image,
		Labels:    c.Labels,
		CreatedAt: time.Unix(c.Created, 0).UTC(),
	}
	if len(c.Names) > 0 {
		s.Name = strings.TrimPrefix(c.Names[0], "/")
	}
	if m := exitedStatus.FindStringSubmatch(c.Status); m != nil {
		if code, err := strconv.Atoi(m[1]); err == nil {
			s.ExitCode = &code
		}
	}
	return s
}

func phaseOf(status string) runtime.Phase {
	switch status {
	case "created":
		return runtime.PhaseCreated
	case "running":
		return runtime.PhaseRunning
	case "paused":
		return runtime.PhasePaused
	case "restarting":
		return runtime.PhaseRestarting
	case "removing":
		return runtime.PhaseRemoving
	case "exited":
		return runtime.PhaseExited
	case "dead":
		return runtime.PhaseDead
	}
	return runtime.PhaseUnknown
}

// parseTime reads the engine's RFC 3339 times; the zero time it writes for
// "never" ("0001-01-01T00:00:00Z") and anything unreadable come back zero.
func parseTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}
