package hostpolicy

import (
	"fmt"
	"path"
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// CheckSpec refuses a resolved spec in which a writable bind source (a
// Docker bind, a Kubernetes hostPath) contains another bind source: a
// container mounting the first could replace a directory on the way to the
// second with a symlink, and the engine (or kubelet) would follow it on the
// host. The manager's ledger rule (Check) covers every template ever
// stored, with variables as wildcards; this repeats it on the paths of the
// one spec a runtime is about to start, so a spec that reached a runtime
// some other way is refused too.
func CheckSpec(vols []container.Volume) error {
	for _, p := range vols {
		if p.Type != container.VolumeBind || p.ReadOnly {
			continue
		}
		outer := strings.TrimSuffix(path.Clean(p.Source), "/") + "/"
		for _, q := range vols {
			if q.Type == container.VolumeBind && strings.HasPrefix(path.Clean(q.Source), outer) {
				return fmt.Errorf("bind mount %q lies inside the writable bind mount %q: a container could redirect it with a symlink", q.Source, p.Source)
			}
		}
	}
	return nil
}
