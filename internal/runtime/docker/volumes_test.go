package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/testenv"
)

// TestNamedVolumeRemoval: a named volume berth's container made is removed
// with the last container that uses it, unless the template asked it to
// persist; a volume berth did not make is never removed.
func TestNamedVolumeRemoval(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 2*time.Minute)
	cli := e.Client("h1")
	suffix := strings.ToLower(berth.NewID())
	made, kept, foreign := "made-"+suffix, "kept-"+suffix, "foreign-"+suffix
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: foreign}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, v := range []string{made, kept, foreign} {
			_, _ = cli.VolumeRemove(t.Context(), v, client.VolumeRemoveOptions{Force: true})
		}
	})
	exists := func(name string) bool {
		_, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
		return err == nil
	}
	with := func(vols ...berth.Volume) berth.Instance {
		inst := e.instance("sleep 600")
		inst.Spec.Volumes = vols
		return inst
	}
	a := e.createStart(t, with(berth.Volume{Type: berth.VolumeNamed, Source: made, Target: "/v"},
		berth.Volume{Type: berth.VolumeNamed, Source: kept, Target: "/k", Persist: true},
		// Shared: berth mounts a volume it did not make only as shared.
		berth.Volume{Type: berth.VolumeNamed, Source: foreign, Target: "/f", Shared: true}))
	b := e.createStart(t, with(berth.Volume{Type: berth.VolumeNamed, Source: made, Target: "/v"}))
	for _, v := range []string{made, kept, foreign} {
		if !exists(v) {
			t.Fatalf("volume %s missing while its containers run", v)
		}
	}
	if err := e.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if !exists(made) {
		t.Errorf("volume %s removed while another container still uses it", made)
	}
	if err := e.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if exists(made) {
		t.Errorf("volume %s outlived its last container", made)
	}
	if !exists(kept) {
		t.Errorf("volume %s (persist) removed", kept)
	}
	if !exists(foreign) {
		t.Errorf("volume %s (not berth's) removed", foreign)
	}
}
