package docker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestBindSymlinkEscape replays the attack on a real engine: an admin
// template mounts <root>/$USERID at /home and <root>/$USERID/$CONTAINER_NAME
// at /data, and lets users set the command's CMD. A user's first container
// plants /home/evil → a host directory; their second, named evil, would get
// that host directory at /data (the engine follows the link). Whatever the
// first container planted, the second must never see the host directory:
// the template is refused, a copy stored before the rule cannot be created
// from, and the engine is never handed such a spec.
func TestBindSymlinkEscape(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		ctx := testenv.Context(t, 2*time.Minute)
		root, hostDir := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(hostDir, "secret"), []byte("host only\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, config.DockerHost{Name: "h1", Endpoint: testenv.DockerHost(t), NetworkMode: "none", AllowedBindRoots: []string{root}})
		st := b.Open(t, time.Now)
		m := manager.New(manager.Options{Store: st, MaxPending: 10, BindRoots: []string{root}, WorkspaceRoot: root + "/ws",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		admin, alice := identity.Caller{User: "root", Admin: true}, identity.Caller{User: "alice"}
		tpl := berth.Template{Name: "attack", Runtime: berth.RuntimeDocker, Image: e.image, PullPolicy: berth.PullNever,
			Command: []string{"sh", "-c", `eval "$$CMD"`}, UserEnv: []string{"CMD"},
			Volumes: []berth.Volume{
				{Type: berth.VolumeBind, Source: root + "/$USERID", Target: "/home"},
				{Type: berth.VolumeBind, Source: root + "/$USERID/$CONTAINER_NAME", Target: "/data"},
			}}

		_, _, err := m.PutTemplate(ctx, admin, tpl)
		var ve *manager.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("PUT: %v", err)
		}
		if err != nil {
			// Refused, as it must be; the rest plays it as if it had been
			// stored before the rule existed.
			if ve.Fields[0].Field != "volumes[1].source" {
				t.Errorf("PUT refused naming %+v, want volumes[1].source", ve.Fields)
			}
			if _, _, err := st.PutTemplate(ctx, tpl); err != nil {
				t.Fatal(err)
			}
		}

		// The first container plants the link.
		plant := "ln -s " + hostDir + " /home/evil"
		if res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "attack", Name: "c1", Env: map[string]string{"CMD": plant}}, nil, "r1"); err == nil {
			run(t, e, res.Instance)
		} else {
			// Refused too: whatever a container may have planted anyway
			// (from a template since deleted) is planted here directly,
			// by a container that may write <root>/alice.
			if !errors.As(err, &ve) {
				t.Fatalf("create c1: %v", err)
			}
			inst := e.instance(plant)
			inst.Spec.Volumes = []berth.Volume{{Type: berth.VolumeBind, Source: root + "/alice", Target: "/home"}}
			run(t, e, inst)
		}
		if target, err := os.Readlink(filepath.Join(root, "alice", "evil")); err != nil || target != hostDir {
			t.Fatalf("the first container did not plant its link: %q, %v", target, err)
		}

		// The second container, named evil, tries to use it.
		steal := "cat /data/secret && touch /data/pwned"
		spec := frozen(ctx, t, m, root, steal)
		inst := e.instance(steal)
		inst.Spec.Volumes = spec
		_, err = e.Create(ctx, inst)
		if err == nil {
			run(t, e, inst)
		} else if !runtime.IsInvalid(err) {
			t.Errorf("the engine was handed the nested binds: err = %v, want invalid", err)
		}
		if _, err := os.Stat(filepath.Join(hostDir, "pwned")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the container named evil wrote into the host directory through the planted link (stat: %v)", err)
		}
	})
}

// frozen is the bind mounts the container named evil gets: the manager's
// resolved spec when it still creates from the template, else what it
// resolved before the rule.
func frozen(ctx context.Context, t *testing.T, m *manager.Manager, root, cmd string) []berth.Volume {
	t.Helper()
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"},
		manager.CreateRequest{Template: "attack", Name: "evil", Env: map[string]string{"CMD": cmd}}, nil, "r2")
	if err == nil {
		return res.Instance.Spec.Volumes
	}
	var ve *manager.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("create evil: %v", err)
	}
	return []berth.Volume{
		{Type: berth.VolumeBind, Source: root + "/alice", Target: "/home"},
		{Type: berth.VolumeBind, Source: root + "/alice/evil", Target: "/data"},
	}
}

// run creates and starts inst and waits for it to exit.
func run(t *testing.T, e *engine, inst berth.Instance) {
	t.Helper()
	ref := e.createStart(t, inst)
	e.waitState(t, ref, "exited", phaseIs(runtime.PhaseExited))
}
