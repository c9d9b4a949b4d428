package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Place returns the host for inst (see runtime.Runtime.Place).
func (r *Runtime) Place(ctx context.Context, inst berth.Instance) (string, error) {
	if inst.RuntimeNodeName != "" {
		if _, err := r.pinned(inst); err != nil {
			return "", err
		}
		return inst.RuntimeNodeName, nil
	}
	p, err := r.place(ctx, inst)
	if err != nil {
		return "", err
	}
	p.release()
	return p.host.cfg.Name, nil
}

// pinned is the host an instance already has, checked to still take it.
func (r *Runtime) pinned(inst berth.Instance) (*host, error) {
	h := r.byName[inst.RuntimeNodeName]
	if h == nil {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, inst.RuntimeNodeName,
			"no docker host named %q is configured", inst.RuntimeNodeName)
	}
	if err := bindsAllowed(inst.Spec.Volumes, h.cfg.AllowedBindRoots); err != nil {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, h.cfg.Name, err)
	}
	return h, nil
}

// placement is place's answer: a host, and either the container an earlier
// attempt already made there or a reservation to release once created.
type placement struct {
	host     *host
	existing *container.Summary
	release  func()
}

// hostLoad is what one host's listing says.
type hostLoad struct {
	active   int                // berth containers holding a place (created, running, …)
	existing *container.Summary // inst's own container, if there
	err      error
}

// place chooses a host for an instance that has none. It lists berth's
// containers on every candidate host at once, which gives both the load and
// any container an earlier attempt made for this instance (adopted rather
// than made twice), then takes the least-loaded host with room.
func (r *Runtime) place(ctx context.Context, inst berth.Instance) (placement, error) {
	cands, err := r.candidates(inst)
	if err != nil {
		return placement{}, err
	}
	loads := make([]hostLoad, len(cands))
	var wg sync.WaitGroup
	for i, h := range cands {
		wg.Go(func() { loads[i] = r.load(ctx, h, inst.ID) })
	}
	wg.Wait()

	var errs []error
	for i, l := range loads {
		if l.existing != nil {
			return placement{host: cands[i], existing: l.existing, release: func() {}}, nil
		}
		if l.err != nil {
			errs = append(errs, l.err)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	best, bestLoad := -1, 0
	for i, h := range cands {
		if loads[i].err != nil {
			continue
		}
		n := loads[i].active + r.reserved[h.cfg.Name]
		if h.cfg.Capacity > 0 && n >= h.cfg.Capacity {
			continue
		}
		if best < 0 || n < bestLoad {
			best, bestLoad = i, n
		}
	}
	if best < 0 {
		if len(errs) == len(cands) {
			return placement{}, runtime.NewError(runtime.ErrUnavailable, "place", inst.ID, "",
				fmt.Errorf("no matching docker host answered: %w", errors.Join(errs...)))
		}
		return placement{}, runtime.Errorf(runtime.ErrUnavailable, "place", inst.ID, "",
			"every matching docker host that answered is full (%s)", names(cands))
	}
	h := cands[best]
	r.reserved[h.cfg.Name]++
	var once sync.Once
	return placement{host: h, release: func() {
		once.Do(func() {
			r.mu.Lock()
			r.reserved[h.cfg.Name]--
			r.mu.Unlock()
		})
	}}, nil
}

// candidates are the hosts whose labels include every scheduling.host_labels
// pair and whose allowed roots admit every bind mount. None is invalid: no
// retry makes a host appear.
func (r *Runtime) candidates(inst berth.Instance) ([]*host, error) {
	want := inst.Spec.Scheduling.HostLabels
	var labelled []*host
	for _, h := range r.hosts {
		if hasLabels(h.cfg.Labels, want) {
			labelled = append(labelled, h)
		}
	}
	if len(labelled) == 0 {
		return nil, runtime.Errorf(runtime.ErrInvalid, "place", inst.ID, "",
			"no docker host has the labels %v", sortedPairs(want))
	}
	var out []*host
	var firstErr error
	for _, h := range labelled {
		if err := bindsAllowed(inst.Spec.Volumes, h.cfg.AllowedBindRoots); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("host %s: %w", h.cfg.Name, err)
			}
			continue
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, runtime.NewError(runtime.ErrInvalid, "place", inst.ID, "", firstErr)
	}
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// load lists berth's containers (of this scope) on h.
func (r *Runtime) load(ctx context.Context, h *host, instanceID string) hostLoad {
	res, err := h.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: r.filters()})
	if err != nil {
		return hostLoad{err: classify(err, "list", "", h.cfg.Name)}
	}
	var l hostLoad
	for i := range res.Items {
		c := &res.Items[i]
		if runtime.Owns(c.Labels, instanceID, r.scope) {
			l.existing = c
		}
		if phaseOf(string(c.State)).Active() {
			l.active++
		}
	}
	return l
}

// filters select berth's containers of this runtime's scope.
func (r *Runtime) filters() client.Filters {
	f := make(client.Filters).Add("label", runtime.LabelManaged+"=true")
	if r.scope != "" {
		f.Add("label", runtime.LabelScope+"="+r.scope)
	}
	return f
}

func names(hs []*host) string {
	s := ""
	for i, h := range hs {
		if i > 0 {
			s += ", "
		}
		s += h.cfg.Name
	}
	return s
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
