package docker

import (
	"context"
	"sync"

	cerrdefs "github.com/containerd/errdefs"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// ImageStatus is one template's image as one host has it: what the local
// server reports at start-up when container.refresh_image_status_on_start
// is set, so that a create fails fast on an image the host lacks.
type ImageStatus struct {
	Template   string `json:"template"`
	Image      string `json:"image"`
	Host       string `json:"host,omitempty"`
	PullPolicy string `json:"pull_policy,omitempty"`
	Present    bool   `json:"present"`
	ImageID    string `json:"image_id,omitempty"`
	// Error says why the image could not be looked up (host down, no host
	// with the template's labels); empty when the answer is Present.
	Error string `json:"error,omitempty"`
}

// WillFail reports whether creating from the template on this host cannot
// work as things stand: the image is missing and may not be pulled.
func (s ImageStatus) WillFail() bool {
	return !s.Present && s.Error == "" && s.PullPolicy == berth.PullNever
}

// CheckImages looks up each Docker template's image on each host the
// template can be placed on (its scheduling.host_labels), all hosts in
// parallel, and reports one status per template and host, in template then
// host order. It pulls nothing: pulls happen on create, per pull policy.
// Templates of other runtimes are skipped.
func (r *Runtime) CheckImages(ctx context.Context, templates []berth.Template) []ImageStatus {
	var out []ImageStatus
	type job struct {
		i int
		h *host
	}
	var jobs []job
	for _, t := range templates {
		if t.Runtime != "" && t.Runtime != berth.RuntimeDocker {
			continue
		}
		base := ImageStatus{Template: t.Name, Image: t.Image, PullPolicy: t.PullPolicy}
		matched := false
		for _, h := range r.hosts {
			if !runtime.HasLabels(h.cfg.Labels, t.Scheduling.HostLabels) {
				continue
			}
			matched = true
			st := base
			st.Host = h.cfg.Name
			jobs = append(jobs, job{len(out), h})
			out = append(out, st)
		}
		if !matched {
			st := base
			st.Error = "no docker host has the template's host_labels"
			out = append(out, st)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // a few lookups at a time per process
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			st := &out[j.i]
			res, err := j.h.cli.ImageInspect(ctx, st.Image)
			switch {
			case err == nil:
				st.Present, st.ImageID = true, res.ID
			case cerrdefs.IsNotFound(err):
			default:
				st.Error = err.Error()
			}
		})
	}
	wg.Wait()
	return out
}
