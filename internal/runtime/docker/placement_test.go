package docker_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/testenv"
)

// twoHosts is hosts "a" and "b" on the two test engines, both labelled
// disk=ssd, with a zone label of their own and the given capacities.
func twoHosts(t *testing.T, capA, capB int) *engine {
	t.Helper()
	return newEngine(t,
		config.DockerHost{Name: "a", Endpoint: testenv.DockerHost(t), NetworkMode: "none", Capacity: capA,
			Labels: map[string]string{"zone": "a", "disk": "ssd"}},
		config.DockerHost{Name: "b", Endpoint: testenv.DockerHost2(t), NetworkMode: "none", Capacity: capB,
			Labels: map[string]string{"zone": "b", "disk": "ssd"}},
	)
}

func (e *engine) labelled(labels map[string]string) berth.Instance {
	inst := e.instance("sleep 60")
	inst.Spec.Scheduling.HostLabels = labels
	return inst
}

func TestPlacement(t *testing.T) {
	t.Parallel()

	t.Run("host labels pick the host", func(t *testing.T) {
		t.Parallel()
		e := twoHosts(t, 0, 0)
		ctx := testenv.Context(t, 60*time.Second)
		for _, want := range []string{"b", "b", "b"} {
			ref, err := e.Create(ctx, e.labelled(map[string]string{"zone": "b"}))
			if err != nil || ref.Node != want {
				t.Fatalf("create with zone=b: %+v, %v", ref, err)
			}
		}
		// zone=a is still placed on a, though a has fewer containers
		// either way: labels come before load.
		ref, err := e.Create(ctx, e.labelled(map[string]string{"zone": "a", "disk": "ssd"}))
		if err != nil || ref.Node != "a" {
			t.Fatalf("create with zone=a: %+v, %v", ref, err)
		}
		_, err = e.Create(ctx, e.labelled(map[string]string{"zone": "c"}))
		if !runtime.IsInvalid(err) {
			t.Errorf("no host with zone=c: %v, want invalid", err)
		}
	})

	t.Run("spreads by load", func(t *testing.T) {
		t.Parallel()
		e := twoHosts(t, 0, 0)
		ctx := testenv.Context(t, 60*time.Second)
		var got []string
		for range 4 {
			ref, err := e.Create(ctx, e.labelled(map[string]string{"disk": "ssd"}))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ref.Node)
		}
		if want := []string{"a", "b", "a", "b"}; !slices.Equal(got, want) {
			t.Errorf("placements = %v, want %v", got, want)
		}
		// Exited containers hold no place: two on a end, so a is the
		// least loaded again.
		list, err := e.List(ctx)
		if err != nil || len(list) != 4 {
			t.Fatalf("list = %d, %v", len(list), err)
		}
		for _, s := range list {
			if s.Node == "a" {
				if err := e.Start(ctx, s.Ref); err != nil {
					t.Fatal(err)
				}
				if err := e.Stop(ctx, s.Ref, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		ref, err := e.Create(ctx, e.instance("true"))
		if err != nil || ref.Node != "a" {
			t.Errorf("after a's containers exited: %+v, %v; want a", ref, err)
		}
	})

	t.Run("capacity", func(t *testing.T) {
		t.Parallel()
		e := twoHosts(t, 1, 1)
		ctx := testenv.Context(t, 60*time.Second)
		var nodes []string
		for range 2 {
			ref, err := e.Create(ctx, e.instance("sleep 60"))
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, ref.Node)
		}
		if slices.Sort(nodes); !slices.Equal(nodes, []string{"a", "b"}) {
			t.Errorf("placements = %v, want one on each host", nodes)
		}
		_, err := e.Create(ctx, e.instance("sleep 60"))
		if !runtime.IsUnavailable(err) || !runtime.Retryable(err) {
			t.Errorf("all hosts full: %v, want unavailable", err)
		}
		// A recorded node is kept even when full: placement was decided.
		pinned := e.instance("sleep 60")
		pinned.RuntimeNodeName = "b"
		if ref, err := e.Create(ctx, pinned); err != nil || ref.Node != "b" {
			t.Errorf("create on a recorded node: %+v, %v", ref, err)
		}
	})

	t.Run("a recorded node wins and a retry finds it", func(t *testing.T) {
		t.Parallel()
		e := twoHosts(t, 0, 0)
		ctx := testenv.Context(t, 60*time.Second)
		inst := e.labelled(map[string]string{"zone": "a"})
		inst.RuntimeNodeName = "b" // decided earlier, labels changed since
		if node, err := e.Place(ctx, inst); err != nil || node != "b" {
			t.Fatalf("place with a recorded node: %q, %v", node, err)
		}
		ref, err := e.Create(ctx, inst)
		if err != nil || ref.Node != "b" {
			t.Fatalf("create on recorded node b: %+v, %v", ref, err)
		}
		// The node was lost (crash before it was recorded): placement
		// finds the container on b instead of making one on a.
		inst.RuntimeNodeName = ""
		inst.Spec.Scheduling.HostLabels = nil
		if node, err := e.Place(ctx, inst); err != nil || node != "b" {
			t.Errorf("place after a lost node: %q, %v; want b", node, err)
		}
		again, err := e.Create(ctx, inst)
		if err != nil || again != ref {
			t.Errorf("create after a lost node: %+v, %v; want %+v", again, err, ref)
		}
		if err := e.Start(ctx, ref); err != nil {
			t.Fatal(err)
		}
		list, err := e.List(ctx)
		if err != nil || len(list) != 1 || list[0].Node != "b" || list[0].Phase != runtime.PhaseRunning {
			t.Errorf("list = %+v, %v", list, err)
		}
	})
}

func TestHostDown(t *testing.T) {
	t.Parallel()
	image := testenv.TestImage(t)
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{
		{Name: "ghost", Endpoint: "unix:///run/berth-test/nothing-here.sock"},
	}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := testenv.Context(t, 20*time.Second)
	if err := rt.Ping(ctx); !runtime.IsUnavailable(err) || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("ping of a missing engine: %v, want unavailable naming the host", err)
	}
	inst := berth.Instance{ID: berth.NewID(), Spec: berth.Spec{Image: image}}
	if _, err := rt.Create(ctx, inst); !runtime.IsUnavailable(err) {
		t.Errorf("create with every host down: %v, want unavailable", err)
	}
	if _, err := rt.List(ctx); !runtime.IsUnavailable(err) {
		t.Errorf("list with every host down: %v, want unavailable", err)
	}
	if err := rt.Delete(ctx, runtime.Ref{InstanceID: inst.ID}); !runtime.IsUnavailable(err) {
		t.Errorf("delete without node, hosts down: %v, want unavailable (cannot tell it is gone)", err)
	}
	// With the node known, each call reaches the engine's socket and is
	// refused: unavailable, not a failure that spends attempts.
	ref := runtime.Ref{InstanceID: inst.ID, Node: "ghost"}
	if err := rt.Stop(ctx, ref, 0); !runtime.IsUnavailable(err) {
		t.Errorf("stop on a down host: %v, want unavailable", err)
	}
	if err := rt.Start(ctx, ref); !runtime.IsUnavailable(err) {
		t.Errorf("start on a down host: %v, want unavailable", err)
	}
	if err := rt.Delete(ctx, ref); !runtime.IsUnavailable(err) {
		t.Errorf("delete on a down host: %v, want unavailable", err)
	}
	if _, err := rt.Inspect(ctx, ref); !runtime.IsUnavailable(err) {
		t.Errorf("inspect on a down host: %v, want unavailable", err)
	}
}

// TestEngineRefusingConnections: a host whose TCP endpoint refuses
// connections (an engine stopped) is unavailable, not failed.
func TestEngineRefusingConnections(t *testing.T) {
	t.Parallel()
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{
		{Name: "stopped", Endpoint: "tcp://" + testenv.FreeAddr(t)},
	}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := testenv.Context(t, 20*time.Second)
	ref := runtime.Ref{InstanceID: berth.NewID(), Node: "stopped"}
	if err := rt.Stop(ctx, ref, 0); !runtime.IsUnavailable(err) || runtime.IsInvalid(err) {
		t.Errorf("stop on a stopped engine: %v, want unavailable", err)
	}
	if _, err := rt.List(ctx); !runtime.IsUnavailable(err) {
		t.Errorf("list on a stopped engine: %v, want unavailable", err)
	}
}
