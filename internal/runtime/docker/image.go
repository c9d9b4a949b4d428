package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
)

// ensureImage makes the image present on h as the pull policy says:
// IfNotPresent (the default) pulls only a missing image, Always pulls every
// time, Never only checks, and a missing image under Never is invalid
// (retrying cannot make it appear; an admin must load it).
func (r *Runtime) ensureImage(ctx context.Context, h *host, image, policy string) error {
	switch policy {
	case "", berth.PullIfNotPresent, berth.PullNever:
		present, err := imagePresent(ctx, h, image)
		if err != nil || present {
			return err
		}
		if policy == berth.PullNever {
			return invalidf("image %s is not on host %s and pull_policy is Never", image, h.cfg.Name)
		}
	case berth.PullAlways:
	default:
		return invalidf("pull_policy %q: want IfNotPresent, Always or Never", policy)
	}
	return r.pull(ctx, h, image)
}

func imagePresent(ctx context.Context, h *host, image string) (bool, error) {
	_, err := h.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", image, err)
}

// pull fetches image onto h with the credentials configured for its
// registry, and waits for the pull to finish.
func (r *Runtime) pull(ctx context.Context, h *host, image string) error {
	auth, err := r.auth.header(ctx, image)
	if err != nil {
		return fmt.Errorf("credentials for %s: %w", image, err)
	}
	r.log.InfoContext(ctx, "pulling image", "image", image, "host", h.cfg.Name)
	resp, err := h.cli.ImagePull(ctx, image, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = resp.Wait(ctx)
		resp.Close()
	}
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err), cerrdefs.IsUnauthorized(err), cerrdefs.IsPermissionDenied(err):
		// No such image, or not for these credentials: not a retry's to
		// fix (and not "not found" for the container being created).
		return invalidf("pull %s: %w", image, err)
	}
	return fmt.Errorf("pull %s: %w", image, err)
}
