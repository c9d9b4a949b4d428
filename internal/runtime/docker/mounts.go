package docker

import (
	"fmt"
	"path"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/berth-io/berth/internal/container"
)

// mounts turns the spec's volumes into Docker mounts for host hc, refusing
// what the host does not allow. Errors are about the request (invalid).
func mounts(vols []container.Volume, allowedRoots []string) ([]mount.Mount, error) {
	out := make([]mount.Mount, 0, len(vols))
	for _, v := range vols {
		if !path.IsAbs(v.Target) {
			return nil, fmt.Errorf("volume target %q: want an absolute path", v.Target)
		}
		m := mount.Mount{Target: path.Clean(v.Target), ReadOnly: v.ReadOnly}
		switch v.Type {
		case container.VolumeBind:
			if err := bindAllowed(v.Source, allowedRoots); err != nil {
				return nil, err
			}
			m.Type, m.Source = mount.TypeBind, path.Clean(v.Source)
		case container.VolumeNamed, "":
			if v.Source == "" || strings.Contains(v.Source, "/") {
				return nil, fmt.Errorf("volume %q: want a volume name (a host path needs type %q)", v.Source, container.VolumeBind)
			}
			m.Type, m.Source = mount.TypeVolume, v.Source
		case container.VolumeEmptyDir:
			// An anonymous volume: it lives and dies with the container
			// (Delete removes it), like a Kubernetes emptyDir.
			m.Type = mount.TypeVolume
		case container.VolumePVC:
			return nil, fmt.Errorf("volume %q: type %q needs the kubernetes runtime", v.Source, v.Type)
		default:
			return nil, fmt.Errorf("volume %q: unknown type %q", v.Source, v.Type)
		}
		out = append(out, m)
	}
	return out, nil
}

// bindAllowed checks a bind source against a host's allowed roots. The check
// is on the cleaned path, so "/data/../etc" is /etc; a symlink under a root
// that points outside it is the host admin's to avoid, as the engine (not
// berth) resolves it on the host.
func bindAllowed(src string, roots []string) error {
	if !path.IsAbs(src) {
		return fmt.Errorf("bind mount source %q: want an absolute host path", src)
	}
	clean := path.Clean(src)
	for _, root := range roots {
		root = path.Clean(root)
		if root == "/" || clean == root || strings.HasPrefix(clean, root+"/") {
			return nil
		}
	}
	if len(roots) == 0 {
		return fmt.Errorf("bind mount source %q: this host allows no bind mounts", src)
	}
	return fmt.Errorf("bind mount source %q is outside the allowed roots %v", src, roots)
}

// bindsAllowed is placement's filter: can host with these roots take all of
// the spec's bind mounts?
func bindsAllowed(vols []container.Volume, roots []string) error {
	for _, v := range vols {
		if v.Type == container.VolumeBind {
			if err := bindAllowed(v.Source, roots); err != nil {
				return err
			}
		}
	}
	return nil
}
