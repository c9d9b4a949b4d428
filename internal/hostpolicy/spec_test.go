package hostpolicy

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
)

// TestCheckSpec: the runtimes' check of one resolved spec (Docker binds
// and Kubernetes hostPaths alike).
func TestCheckSpec(t *testing.T) {
	bind := func(src string, ro bool) container.Volume {
		return container.Volume{Type: container.VolumeBind, Source: src, Target: "/t" + src, ReadOnly: ro}
	}
	cases := []struct {
		name string
		vols []container.Volume
		ok   bool
	}{
		{"the issue's spec", []container.Volume{bind("/r/alice", false), bind("/r/alice/evil", false)}, false},
		{"order does not matter", []container.Volume{bind("/r/alice/evil", true), bind("/r/alice/", false)}, false},
		{"read-only outer", []container.Volume{bind("/r/alice", true), bind("/r/alice/evil", false)}, true},
		{"siblings", []container.Volume{bind("/r/alice", false), bind("/r/alice2", false)}, true},
		{"the same directory twice", []container.Volume{bind("/r/alice", false), bind("/r/alice/", false)}, true},
	}
	for _, c := range cases {
		if err := CheckSpec(c.vols); (err == nil) != c.ok {
			t.Errorf("%s: CheckSpec = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
