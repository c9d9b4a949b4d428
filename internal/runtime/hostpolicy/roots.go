package hostpolicy

import (
	"fmt"
	"path"
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// HostPathAllowed checks a bind source (a Docker bind mount, a Kubernetes
// hostPath) against the roots a host or cluster allows. The check is on the
// cleaned path, so "/data/../etc" is /etc, and a root of "/" allows every
// path. It is a check of strings: what keeps a container from redirecting a
// source with a symlink is that none can write a directory above one
// (the Docker runtime's nesting check and the manager's rule across templates); a symlink
// the host's admin put under a root is the admin's to answer for.
func HostPathAllowed(src string, roots []string) error {
	if !path.IsAbs(src) {
		return fmt.Errorf("bind source %q: want an absolute host path", src)
	}
	clean := path.Clean(src)
	for _, root := range roots {
		root = path.Clean(root)
		if root == "/" || clean == root || strings.HasPrefix(clean, root+"/") {
			return nil
		}
	}
	if len(roots) == 0 {
		return fmt.Errorf("bind source %q: this node allows no host paths", src)
	}
	return fmt.Errorf("bind source %q is outside the allowed roots %v", src, roots)
}

// HostPathsAllowed is placement's filter: can a node with these roots take
// every bind source of vols?
func HostPathsAllowed(vols []container.Volume, roots []string) error {
	for _, v := range vols {
		if v.Type == container.VolumeBind {
			if err := HostPathAllowed(v.Source, roots); err != nil {
				return err
			}
		}
	}
	return nil
}
