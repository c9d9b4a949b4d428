package dockersim_test

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/testenv"
)

// TestRunAndReplay: a container runs for the time its env says and exits
// with its code (the fleet's RunFor otherwise), the exit is streamed, and
// a watch from before the run replays it from the host's event log.
func TestRunAndReplay(t *testing.T) {
	t.Parallel()
	_, rt := newFleet(t, dockersim.Options{Hosts: 2, Images: []string{"sim/app:1"}, RunFor: 200 * time.Millisecond})
	ctx := testenv.Context(t, 30*time.Second)
	before := time.Now()
	events, err := rt.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	own := instance(100*time.Millisecond, "3")
	fleetDefault := instance(0, "0")
	refOwn, err := rt.Create(ctx, own)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	refDefault, err := rt.Create(ctx, fleetDefault)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, ref := range []runtime.Ref{refOwn, refDefault} {
		if err := rt.Start(ctx, ref); err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	exits := map[string]int{}
	for len(exits) < 2 {
		select {
		case ev := <-events:
			if ev.Kind == runtime.EventExited && ev.ExitCode != nil {
				exits[ev.InstanceID] = *ev.ExitCode
			}
		case <-ctx.Done():
			t.Fatalf("exits seen: %v", exits)
		}
	}
	if exits[own.ID] != 3 || exits[fleetDefault.ID] != 0 {
		t.Errorf("exit codes %v, want 3 for %s and 0 for %s", exits, own.ID, fleetDefault.ID)
	}
	st, err := rt.Inspect(ctx, refDefault)
	if err != nil || st.Phase != runtime.PhaseExited || st.StartedAt == nil || st.FinishedAt == nil ||
		st.FinishedAt.Sub(*st.StartedAt) < 200*time.Millisecond {
		t.Errorf("after the fleet's 200 ms run: %+v, %v", st, err)
	}

	replayed, err := rt.WatchSince(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []runtime.EventKind
	for len(kinds) < 2 {
		select {
		case ev := <-replayed:
			if ev.InstanceID == own.ID {
				kinds = append(kinds, ev.Kind)
			}
		case <-ctx.Done():
			t.Fatalf("replayed: %v", kinds)
		}
	}
	if kinds[0] != runtime.EventStarted || kinds[1] != runtime.EventExited {
		t.Errorf("replayed %v, want started then exited", kinds)
	}
}

// TestEventLogBounded: a host keeps its last EventLog events only, so a
// watch from long ago replays no more than those.
func TestEventLogBounded(t *testing.T) {
	t.Parallel()
	_, rt := newFleet(t, dockersim.Options{Hosts: 1, Images: []string{"sim/app:1"}, EventLog: 4})
	ctx := testenv.Context(t, 30*time.Second)
	before := time.Now()
	var ids []string
	for range 3 { // create and start: 2 events each; only start is watched
		inst := instance(0, "0")
		ref, err := rt.Create(ctx, inst)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx, ref); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	events, err := rt.WatchSince(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	// The log holds create₂ start₂ create₃ start₃: the first start is gone.
	var got []string
	for len(got) < 2 {
		select {
		case ev := <-events:
			got = append(got, ev.InstanceID)
		case <-ctx.Done():
			t.Fatalf("replayed %v", got)
		}
	}
	if got[0] != ids[1] || got[1] != ids[2] {
		t.Errorf("replayed starts of %v, want the last two of %v", got, ids)
	}
}

// TestStreams: the fleet counts the /events streams open on its hosts,
// and a stream ends with its watch.
func TestStreams(t *testing.T) {
	t.Parallel()
	f, rt := newFleet(t, dockersim.Options{Hosts: 3})
	ctx, cancel := context.WithCancel(testenv.Context(t, 30*time.Second))
	if _, err := rt.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	waitStreams(t, f, 3)
	cancel()
	waitStreams(t, f, 0)
}

func waitStreams(t *testing.T, f *dockersim.Fleet, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.Streams() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", f.Streams(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunFills: a container made by Host.Run is what the API shows, to a
// runtime of the same scope, as running.
func TestRunFills(t *testing.T) {
	t.Parallel()
	f, rt := newFleet(t, dockersim.Options{Hosts: 2, Images: []string{"sim/app:1"}})
	inst := instance(0, "0")
	h := f.Hosts()[1]
	id, err := h.Run(runtime.ObjectName(inst.ID), container.Config{Image: "sim/app:1", Labels: runtime.Labels(inst, "")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Inspect(testenv.Context(t, 10*time.Second), runtime.Ref{InstanceID: inst.ID, Node: h.Name()})
	if err != nil || st.Phase != runtime.PhaseRunning || st.RuntimeID != id || st.InstanceID != inst.ID {
		t.Errorf("a container Run made: %+v, %v", st, err)
	}
	if _, err := h.Run(runtime.ObjectName(inst.ID), container.Config{Image: "sim/app:1"}); err == nil {
		t.Error("a second Run of the same name succeeded")
	}
}
