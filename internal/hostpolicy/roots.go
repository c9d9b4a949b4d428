package hostpolicy

import (
	"errors"
	"fmt"
	"path"
	"slices"
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
	if Under(path.Clean(src), roots) {
		return nil
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

// Under reports whether the clean absolute path p lies inside one of roots
// (a root is inside itself; "/" holds every path).
func Under(p string, roots []string) bool {
	for _, root := range roots {
		root = path.Clean(root)
		if root == "/" || p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// CheckRoot is the rule for a root a node (a Docker host's
// allowed_bind_roots, a cluster's allowed_host_path_roots) may allow: an
// absolute, clean path other than "/". Binding / (or the Docker socket, or
// a node's kubelet directory, under it) gives a container the node;
// allowing that must not be one line of configuration.
func CheckRoot(root string) error {
	switch {
	case root == "":
		return errors.New("must not be empty")
	case !path.IsAbs(root):
		return fmt.Errorf("must be an absolute path, got %q", root)
	case path.Clean(root) != root:
		return fmt.Errorf("must be a clean path (%q), got %q", path.Clean(root), root)
	case root == "/":
		return errors.New("must not be / (it would allow binding any host path)")
	}
	return nil
}

// Union is every root of lists, each once, in the order first seen: the
// roots a template may bind from at all, whichever node takes it (each
// node checks its own again at placement).
func Union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
