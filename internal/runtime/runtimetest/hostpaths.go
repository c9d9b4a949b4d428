package runtimetest

import (
	"path"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// withBind is inst with one bind volume from source.
func withBind(inst container.Instance, source string) container.Instance {
	inst.Spec.Volumes = append(inst.Spec.Volumes, container.Volume{Type: container.VolumeBind, Source: source, Target: "/data", Shared: true})
	return inst
}

// testHostPaths: both runtimes apply the one host-path policy
// (hostpolicy) at placement: a bind source under a node's roots
// places, one outside them (or escaping them with "..") is invalid, and
// an instance pinned to a node that does not allow its source is refused
// before anything is made.
func testHostPaths(t *testing.T, h Harness) {
	if h.BindRoot == "" {
		t.Fatal("the harness has no BindRoot: the host-path cases need a root its nodes allow")
	}
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	node, err := rt.Place(ctx, withBind(h.Running(t), path.Join(h.BindRoot, "inside")))
	if err != nil {
		t.Fatalf("place with a bind under the allowed root: %v", err)
	}
	for _, source := range []string{
		"/berth-outside-every-root/x",
		path.Join(h.BindRoot, "../escape"),
		path.Dir(h.BindRoot),
		"relative/path",
	} {
		inst := withBind(h.Running(t), source)
		if _, err := rt.Place(ctx, inst); !runtime.IsInvalid(err) {
			t.Errorf("place with bind %q: %v, want invalid", source, err)
		}
		inst.RuntimeNodeName = node
		if _, err := rt.Create(ctx, inst); !runtime.IsInvalid(err) {
			t.Errorf("create pinned to %s with bind %q: %v, want invalid", node, source, err)
		}
		if _, err := rt.Inspect(ctx, runtime.RefOf(inst)); !runtime.IsNotFound(err) {
			t.Errorf("after a refused create with bind %q, inspect: %v, want not found (nothing made)", source, err)
		}
	}
}
