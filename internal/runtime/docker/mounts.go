package docker

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
)

// volumeName is what the engine's local volume driver accepts as a name.
var volumeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// mounts turns the spec's volumes of an instance of owner into Docker
// mounts for host hc, refusing what the host does not allow. Errors are
// about the request (invalid).
//
// Bind mounts are returned as HostConfig.Binds entries ("src:dst[:ro]"),
// not as mounts: for a Binds entry the engine makes a missing source
// directory, as `docker run -v` does, so a per-user path such as
// $WORKSPACE_PATH works on first use (a bind mount of type "bind" fails on
// a missing source, and API 1.41 engines have no CreateMountpoint).
func mounts(vols []container.Volume, owner string, allowedRoots []string) (ms []mount.Mount, binds []string, err error) {
	ms = make([]mount.Mount, 0, len(vols))
	for _, v := range vols {
		if !path.IsAbs(v.Target) {
			return nil, nil, fmt.Errorf("volume target %q: want an absolute path", v.Target)
		}
		m := mount.Mount{Target: path.Clean(v.Target), ReadOnly: v.ReadOnly}
		if m.Target == "/" {
			return nil, nil, fmt.Errorf("volume %q: target '/' would replace the container's root", v.Source)
		}
		switch v.Type {
		case container.VolumeBind:
			if err := hostpolicy.HostPathAllowed(v.Source, allowedRoots); err != nil {
				return nil, nil, err
			}
			if strings.ContainsAny(v.Source, ":,") || strings.ContainsAny(v.Target, ":,") {
				return nil, nil, fmt.Errorf("bind mount %q → %q: paths must not contain ':' or ','", v.Source, v.Target)
			}
			b := path.Clean(v.Source) + ":" + m.Target
			if v.ReadOnly {
				b += ":ro"
			}
			binds = append(binds, b)
			continue
		case container.VolumeNamed, "":
			if !volumeName.MatchString(v.Source) {
				return nil, nil, fmt.Errorf("volume %q: want a volume name (a host path needs type %q)", v.Source, container.VolumeBind)
			}
			m.Type, m.Source = mount.TypeVolume, v.Source
			m.VolumeOptions = namedVolumeOptions(v, owner)
		case container.VolumeEmptyDir:
			// An anonymous volume: it lives and dies with the container
			// (Delete removes it), like a Kubernetes emptyDir.
			m.Type = mount.TypeVolume
		case container.VolumePVC:
			return nil, nil, fmt.Errorf("volume %q: type %q needs the kubernetes runtime", v.Source, v.Type)
		default:
			return nil, nil, fmt.Errorf("volume %q: unknown type %q", v.Source, v.Type)
		}
		ms = append(ms, m)
	}
	if err := hostpolicy.CheckSpec(vols); err != nil {
		return nil, nil, err
	}
	return ms, binds, nil
}
