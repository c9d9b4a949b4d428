package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

var (
	rootCaller = identity.Caller{User: "root", Admin: true}
	quiet      = slog.New(slog.NewTextHandler(io.Discard, nil))
)

func bindTemplate(name, source string, ro bool) container.Template {
	return container.Template{Name: name, Runtime: "docker", Image: "x", PullPolicy: container.PullIfNotPresent,
		Volumes: []container.Volume{{Type: container.VolumeBind, Source: source, Target: "/m", ReadOnly: ro}}}
}

// TestBindLedgerRacingPuts: the reproduction 3. Template PUTs
// racing (an outer one writable, an inner one), through two managers over
// one store (two processes, each with its own cached ledger): at most one
// of them is ever stored, whatever the interleaving.
func TestBindLedgerRacingPuts(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		st := b.Open(t, time.Now)
		m1 := manager.New(manager.Options{Store: st, BindRoots: []string{"/r"}, Logger: quiet})
		m2 := manager.New(manager.Options{Store: st, BindRoots: []string{"/r"}, Logger: quiet})
		for round := range 6 {
			outer := bindTemplate(fmt.Sprintf("outer%d", round), fmt.Sprintf("/r/tr%d/$USERID", round), false)
			inner := bindTemplate(fmt.Sprintf("inner%d", round), fmt.Sprintf("/r/tr%d/$USERID/sub", round), true)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			wg.Add(2)
			go func() { defer wg.Done(); _, _, errs[0] = m1.PutTemplate(ctx, rootCaller, outer) }()
			go func() { defer wg.Done(); _, _, errs[1] = m2.PutTemplate(ctx, rootCaller, inner) }()
			wg.Wait()
			var ve *manager.ValidationError
			refused := 0
			for _, err := range errs {
				switch {
				case err == nil:
				case errors.As(err, &ve):
					refused++
				default:
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if refused != 1 {
				t.Errorf("round %d: %d of the two racing PUTs refused, want exactly 1 (%v)", round, refused, errs)
			}
		}
	})
}

// TestBindLedgerSeedsAndRecords: a store without a ledger (an upgrade) is
// seeded from its templates on first use; a template written past the
// manager is recorded at its first create and then binds later PUTs.
func TestBindLedgerSeedsAndRecords(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		st := b.Open(t, time.Now)
		if _, _, err := st.PutTemplate(ctx, bindTemplate("old", "/r/o/$USERID", false)); err != nil {
			t.Fatal(err)
		}
		m := manager.New(manager.Options{Store: st, BindRoots: []string{"/r"}, Logger: quiet})
		var ve *manager.ValidationError
		if _, _, err := m.PutTemplate(ctx, rootCaller, bindTemplate("in", "/r/o/$USERID/x", true)); !errors.As(err, &ve) {
			t.Fatalf("a bind below a template stored before the ledger: %v, want a 422", err)
		}
		// Past the manager, after the ledger exists: recorded at create.
		if _, _, err := st.PutTemplate(ctx, bindTemplate("late", "/r/l/$USERID", false)); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CreateByTemplate(ctx, identity.Caller{User: "bob"}, manager.CreateRequest{Template: "late"}, nil, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteTemplate(ctx, "late"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.PutTemplate(ctx, rootCaller, bindTemplate("in2", "/r/l/$USERID/x", true)); !errors.As(err, &ve) {
			t.Fatalf("a bind below a deleted template's writable source: %v, want a 422", err)
		}
		l, err := m.BindLedger(ctx, rootCaller)
		if err != nil || len(l.Entries) != 2 {
			t.Fatalf("ledger = %+v, %v; want the two writable entries", l, err)
		}
	})
}

// TestNamedVolumeScoping: the reproduction 4 for named volumes. A
// volume named by the container's name is scoped to its owner, so bob
// naming his container like alice's does not get her volume; a shared
// one is the same for all.
func TestNamedVolumeScoping(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		m := manager.New(manager.Options{Store: b.Open(t, time.Now), Logger: quiet})
		tpl := container.Template{Name: "v", Runtime: "docker", Image: "x", Volumes: []container.Volume{
			{Type: container.VolumeNamed, Source: "vol-$CONTAINER_NAME", Target: "/v"},
			{Type: container.VolumeNamed, Source: "common", Target: "/c", Shared: true, Persist: true},
		}}
		if _, _, err := m.PutTemplate(ctx, rootCaller, tpl); err != nil {
			t.Fatal(err)
		}
		spec := func(user string) container.Spec {
			res, err := m.CreateByTemplate(ctx, identity.Caller{User: user}, manager.CreateRequest{Template: "v", Name: "data"}, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			return res.Instance.Spec
		}
		a, bb := spec("alice"), spec("bob")
		if a.Volumes[0].Source == bb.Volumes[0].Source {
			t.Errorf("alice and bob share the volume %q", a.Volumes[0].Source)
		}
		if a.Volumes[0].Source != hostpolicy.ScopedVolumeName("vol-data", "alice") {
			t.Errorf("alice's volume = %q", a.Volumes[0].Source)
		}
		if a.Volumes[1].Source != "common" || bb.Volumes[1].Source != "common" || !a.Volumes[1].Persist {
			t.Errorf("the shared volume: %+v, %+v", a.Volumes[1], bb.Volumes[1])
		}
	})
}

// TestKubernetesHostPathsSameRule: a Kubernetes hostPath is a bind source
// for the ledger: the same rule holds across runtimes (kwok runs no
// kubelet, so no mount can be observed there; the policy's decisions are
// what is tested).
func TestKubernetesHostPathsSameRule(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		m := manager.New(manager.Options{Store: b.Open(t, time.Now), BindRoots: []string{"/r"}, Runtimes: []string{"docker", "kubernetes"}, Logger: quiet})
		kube := bindTemplate("kh", "/r/k/$USERID", false)
		kube.Runtime = "kubernetes"
		if _, _, err := m.PutTemplate(ctx, rootCaller, kube); err != nil {
			t.Fatal(err)
		}
		kube.Volumes[0].ReadOnly = true
		if _, _, err := m.PutTemplate(ctx, rootCaller, kube); err != nil {
			t.Fatal(err)
		}
		var ve *manager.ValidationError
		for _, rt := range []string{"docker", "kubernetes"} {
			inner := bindTemplate("in-"+rt, "/r/k/$USERID/data", true)
			inner.Runtime = rt
			if _, _, err := m.PutTemplate(ctx, rootCaller, inner); !errors.As(err, &ve) {
				t.Errorf("%s template below a once-writable hostPath: %v, want a 422", rt, err)
			}
		}
		shared := bindTemplate("ks", "/r/tools", true)
		shared.Runtime = "kubernetes"
		if _, _, err := m.PutTemplate(ctx, rootCaller, shared); !errors.As(err, &ve) {
			t.Errorf("a hostPath naming no owner, not shared: %v, want a 422", err)
		}
	})
}

// TestUserIDEscapingCannotMeetWorkspace: $WORKSPACE_PATH escapes a user
// id ("a@b" is a%40b), so a raw $USERID of "a%40b" would name a@b's
// workspace under a template that mounts <workspace_root>/$USERID: such an
// id is refused in a bind source through $USERID.
func TestUserIDEscapingCannotMeetWorkspace(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		m := manager.New(manager.Options{Store: b.Open(t, time.Now), BindRoots: []string{"/r"}, WorkspaceRoot: "/r/ws", Logger: quiet})
		for _, tpl := range []container.Template{bindTemplate("raw", "/r/ws/$USERID", true), bindTemplate("ws", "$WORKSPACE_PATH", false)} {
			if _, _, err := m.PutTemplate(ctx, rootCaller, tpl); err != nil {
				t.Fatalf("%s: %v", tpl.Name, err)
			}
		}
		var ve *manager.ValidationError
		if _, err := m.CreateByTemplate(ctx, identity.Caller{User: "a%40b"}, manager.CreateRequest{Template: "raw"}, nil, ""); !errors.As(err, &ve) {
			t.Errorf("user a%%40b through $USERID: %v, want a 422", err)
		}
		for _, user := range []string{"a@b", "a%40b"} {
			if _, err := m.CreateByTemplate(ctx, identity.Caller{User: user}, manager.CreateRequest{Template: "ws"}, nil, ""); err != nil {
				t.Errorf("user %q through $WORKSPACE_PATH: %v", user, err)
			}
		}
	})
}
