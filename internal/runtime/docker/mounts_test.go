package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

func TestMounts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, config.DockerHost{
		Name: "h1", Endpoint: testenv.DockerHost(t), NetworkMode: "none", AllowedBindRoots: []string{root},
	})
	ctx := testenv.Context(t, 60*time.Second)
	volume := "berth-test-" + strings.ToLower(berth.NewID())
	t.Cleanup(func() {
		// Runs before newEngine's cleanup: the container must go first.
		ctx := testenv.Context(t, 30*time.Second)
		if list, err := e.List(ctx); err == nil {
			for _, s := range list {
				e.Delete(ctx, s.Ref)
			}
		}
		if _, err := e.Client("h1").VolumeRemove(ctx, volume, client.VolumeRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove volume: %v", err)
		}
	})

	t.Run("allowed bind, named volume and empty dir", func(t *testing.T) {
		events, err := e.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Exit 0 only if the bind is readable and read-only, and the
		// volumes are writable.
		inst := e.instance(`grep -q "from the host" /host/hello && ! touch /host/x 2>/dev/null && echo ok > /vol/f && echo ok > /scratch/f`)
		inst.Spec.Volumes = []berth.Volume{
			{Type: berth.VolumeBind, Source: root, Target: "/host", ReadOnly: true},
			{Type: berth.VolumeNamed, Source: volume, Target: "/vol"},
			{Type: berth.VolumeEmptyDir, Target: "/scratch"},
		}
		e.createStart(t, inst)
		ev := waitEvent(t, events, inst.ID, "exited", kindIs(runtime.EventExited))
		if ev.ExitCode == nil || *ev.ExitCode != 0 {
			t.Errorf("the mount checks inside the container failed: exit %s", code(ev.ExitCode))
		}
	})

	t.Run("bind source made on first use", func(t *testing.T) {
		events, err := e.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(root, "workspaces", "alice")
		inst := e.instance(`echo ok > /work/f`)
		inst.Spec.Volumes = []berth.Volume{{Type: berth.VolumeBind, Source: missing, Target: "/work"}}
		e.createStart(t, inst)
		ev := waitEvent(t, events, inst.ID, "exited", kindIs(runtime.EventExited))
		if ev.ExitCode == nil || *ev.ExitCode != 0 {
			t.Fatalf("writing to a new bind source failed: exit %s", code(ev.ExitCode))
		}
		if b, err := os.ReadFile(filepath.Join(missing, "f")); err != nil || string(b) != "ok\n" {
			t.Fatalf("the container's file on the host: %q, %v", b, err)
		}
	})

	refused := []struct {
		name string
		vol  berth.Volume
	}{
		{"outside the roots", berth.Volume{Type: berth.VolumeBind, Source: "/etc", Target: "/x"}},
		{"escaping with ..", berth.Volume{Type: berth.VolumeBind, Source: root + "/../..", Target: "/x"}},
		{"a colon in the path", berth.Volume{Type: berth.VolumeBind, Source: root + "/a:b", Target: "/x"}},
	}
	for _, tt := range refused {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			inst := e.instance("true")
			inst.Spec.Volumes = []berth.Volume{tt.vol}
			// Both with placement and on a recorded node.
			for _, node := range []string{"", "h1"} {
				inst.RuntimeNodeName = node
				_, err := e.Create(ctx, inst)
				if !runtime.IsInvalid(err) {
					t.Errorf("node %q: err = %v, want invalid", node, err)
				}
				noSecret(t, err)
			}
			if list, _ := e.List(ctx); len(list) != 2 { // only the first two subtests'

				t.Errorf("a refused create left containers: %+v", list)
			}
		})
	}
}
