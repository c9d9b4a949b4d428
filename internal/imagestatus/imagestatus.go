// Package imagestatus refreshes the stored image status of every template
// (container.refresh_image_status_on_start): the local server does it at
// start, the reconciler function at its first pass after a cold start.
package imagestatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store"
)

// Checker looks up templates' images on the hosts each may be placed on,
// pulling nothing (docker.Runtime).
type Checker interface {
	CheckImages(ctx context.Context, templates []container.Template) []docker.ImageStatus
}

var _ Checker = (*docker.Runtime)(nil)

// Refresh checks every Docker template's image on its hosts and stores the
// result with each template, stamped now. A template deleted meanwhile is
// skipped. It returns what the check found, for logs and health reports.
func Refresh(ctx context.Context, st store.TemplateStore, check Checker, now time.Time) ([]docker.ImageStatus, error) {
	tpls, err := st.ListTemplates(ctx)
	if err != nil {
		return nil, fmt.Errorf("image status: listing templates: %w", err)
	}
	var docker []container.Template
	for _, t := range tpls {
		if t.Runtime == "" || t.Runtime == container.RuntimeDocker {
			docker = append(docker, t)
		}
	}
	found := check.CheckImages(ctx, docker)
	byTemplate := map[string][]container.ImageStatus{}
	for _, f := range found {
		byTemplate[f.Template] = append(byTemplate[f.Template], Of(f, now))
	}
	var errs []error
	for _, t := range docker {
		err := st.SetImageStatus(ctx, t.Name, byTemplate[t.Name])
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, fmt.Errorf("image status of template %s: %w", t.Name, err))
		}
	}
	return found, errors.Join(errs...)
}

// Of is the stored form of one host's answer.
func Of(s docker.ImageStatus, at time.Time) container.ImageStatus {
	out := container.ImageStatus{Host: s.Host, Image: s.Image, ImageID: s.ImageID, Error: s.Error, CheckedAt: at.UTC()}
	switch {
	case s.Error != "":
		out.Status = container.ImageError
	case s.Present:
		out.Status = container.ImagePresent
	default:
		out.Status = container.ImageMissing
	}
	return out
}
