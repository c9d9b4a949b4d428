package docker_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestNamedVolumeOwners: a named volume that exists is mounted only as it
// was made: for the same owner (or shared), keeping its data as the
// template asks. Otherwise the create fails for good (invalid) before any
// container is made, and the volume stays as it was. Each case makes the
// volume first, through berth's create (which labels it as berth does) or
// outside berth, then creates the container under test. The names are
// the manager's: an owner's volume is hostpolicy.ScopedVolumeName's.
func TestNamedVolumeOwners(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 2*time.Minute)
	cli := e.Client("h1")
	type mountAs struct {
		owner           string
		shared, persist bool
	}
	cases := []struct {
		name    string
		first   *mountAs // nil: made outside berth, without labels
		then    mountAs
		refused bool
	}{
		// The issue's collision: bob names his container "data-u<alice's
		// digits>" under a shared template keyed by $CONTAINER_NAME.
		{"bob's shared volume is alice's persistent one", &mountAs{"alice", false, true}, mountAs{"bob", true, false}, true},
		// The loss: bob's container made carol's name first, not
		// persisting; carol's persistent data must not go where bob's
		// delete removes it.
		{"carol's persistent volume was made by bob's shared one", &mountAs{"bob", true, false}, mountAs{"carol", false, true}, true},
		{"the same owner, persist made false, asked true", &mountAs{"alice", false, false}, mountAs{"alice", false, true}, true},
		{"the same owner, persist made true, asked false", &mountAs{"alice", false, true}, mountAs{"alice", false, false}, true},
		{"another owner's scoped volume as scoped", &mountAs{"alice", false, false}, mountAs{"bob", false, false}, true},
		{"not berth's, for a scoped volume", nil, mountAs{"alice", false, false}, true},
		{"not berth's, for a shared volume (an admin's data)", nil, mountAs{"bob", true, false}, false},
		{"the same owner, as made", &mountAs{"alice", false, true}, mountAs{"alice", false, true}, false},
		{"shared, as made, by another user", &mountAs{"alice", true, false}, mountAs{"bob", true, false}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The name is the scoped side's, as the manager makes it.
			scopedTo := tc.then.owner
			if tc.first != nil && !tc.first.shared {
				scopedTo = tc.first.owner
			}
			name := hostpolicy.ScopedVolumeName("data-"+strings.ToLower(berth.NewID()), scopedTo)
			t.Cleanup(func() { _, _ = cli.VolumeRemove(t.Context(), name, client.VolumeRemoveOptions{Force: true}) })
			inst := func(as mountAs) berth.Instance {
				in := e.instance("sleep 600")
				in.Owner = as.owner
				in.Spec.Volumes = []berth.Volume{{Type: berth.VolumeNamed, Source: name, Target: "/v", Shared: as.shared, Persist: as.persist}}
				return in
			}
			if tc.first == nil {
				if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := e.Create(ctx, inst(*tc.first)); err != nil {
				t.Fatalf("first create: %v", err)
			}
			before, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			then := inst(tc.then)
			ref, err := e.Create(ctx, then)
			if !tc.refused {
				if err != nil {
					t.Fatalf("create: %v, want it made", err)
				}
				return
			}
			if !runtime.IsInvalid(err) {
				t.Fatalf("create: ref %v, err %v; want refused as invalid", ref, err)
			}
			if _, err := cli.ContainerInspect(ctx, runtime.ObjectName(then.ID), client.ContainerInspectOptions{}); err == nil {
				t.Error("the refused create left a container mounting the volume")
			}
			// The refused instance's delete (the worker fails it, the
			// user deletes it) leaves the volume to whoever made it.
			if err := e.Delete(ctx, runtime.Ref{InstanceID: then.ID, Node: "h1"}); err != nil {
				t.Fatalf("delete of the refused instance: %v", err)
			}
			after, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
			if err != nil {
				t.Fatalf("the volume is gone: %v", err)
			}
			if !maps.Equal(after.Volume.Labels, before.Volume.Labels) {
				t.Errorf("the volume's labels changed: %v, were %v", after.Volume.Labels, before.Volume.Labels)
			}
		})
	}
}
