package reconcile_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestPassOverManyInstances runs passes over a dozen active instances on
// the real engine, per store backend: the pass that brings every creating
// instance to running (an OnEvent transition and an Inspect each), the
// steady pass with nothing to do (1 List, 1 ListActive walk, the admission
// repair), and the pass that finds every container removed. The outcomes
// are asserted; the timings are logged (-v) only as a reading aid: what a
// pass costs at scale is BenchmarkReconcileScale's.
//
// The backends share one set of containers: every backend's store holds the
// same instances (the same ids) and its reconciler compares them with the
// same containers. Starting and removing containers on the engine is most
// of the test's time (≈ 1 s a container on a loaded 2-core machine) and is
// not what it checks, so n is only large enough for each pass to handle
// many instances (3 rounds of startAll's 4 at a time). The backends take
// turns, and no pass runs while containers start or are removed.
func TestPassOverManyInstances(t *testing.T) {
	t.Parallel()
	const n = 12
	var rigs []*rig
	var names []string
	for _, b := range teststores.All {
		s := b.Open(t, time.Now)
		if len(rigs) == 0 {
			rigs = append(rigs, newRig(t, s))
		} else {
			rigs = append(rigs, rigs[0].sharing(t, s))
		}
		names = append(names, b.Name)
	}
	first := rigs[0]
	insts := make([]container.Instance, n)
	for i := range insts {
		pending := first.create("sleeper")
		for _, r := range rigs[1:] {
			r.adopt(pending)
			r.creating(pending, node)
		}
		insts[i] = first.creating(pending, node)
	}
	refs := startAll(t, first, insts)

	for i, r := range rigs {
		start := time.Now()
		rep := r.run(r.reconciler())
		t.Logf("%s: pass with %d creating → running: %s (report duration %d ms)", names[i], rep.Started, time.Since(start).Round(time.Millisecond), rep.DurationMS)
		if rep.Started != n {
			t.Fatalf("%s: started %d, want %d: %+v", names[i], rep.Started, n, rep)
		}

		var steady []time.Duration
		for range 5 {
			start = time.Now()
			rep = r.run(r.reconciler())
			steady = append(steady, time.Since(start))
			if rep.Actions() != 0 || rep.Instances != n {
				t.Fatalf("%s: steady pass acted: %+v", names[i], rep)
			}
		}
		slices.Sort(steady)
		t.Logf("%s: steady pass over %d running instances: min %s, median %s, max %s", names[i], n,
			steady[0].Round(time.Microsecond), steady[len(steady)/2].Round(time.Microsecond), steady[len(steady)-1].Round(time.Microsecond))
	}

	removeAll(t, first, refs)
	for i, r := range rigs {
		r.advance(time.Hour)
		start := time.Now()
		rep := r.run(r.reconciler())
		t.Logf("%s: pass with %d running → failed (destroyed): %s", names[i], rep.Destroyed, time.Since(start).Round(time.Millisecond))
		if rep.Destroyed != n {
			t.Fatalf("%s: destroyed %d, want %d", names[i], rep.Destroyed, n)
		}
		for _, inst := range insts[:3] {
			wantStatus(t, r.get(inst.ID), fsm.Failed)
		}
	}
}

// startAll starts the instances' containers (4 at a time) and waits until
// they all run.
func startAll(t *testing.T, r *rig, insts []container.Instance) []runtime.Ref {
	t.Helper()
	setup := time.Now()
	refs := make([]runtime.Ref, len(insts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range insts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			refs[i] = r.start(insts[i])
		})
	}
	wg.Wait()
	for _, ref := range refs {
		r.waitPhase(ref, runtime.PhaseRunning)
	}
	t.Logf("setup: %d containers started in %s", len(insts), time.Since(setup).Round(time.Millisecond))
	return refs
}

// removeAll removes the containers behind berth's back (4 at a time).
func removeAll(t *testing.T, r *rig, refs []runtime.Ref) {
	t.Helper()
	rm := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, ref := range refs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_ = r.rt.Delete(testenv.Context(t, time.Minute), ref)
		})
	}
	wg.Wait()
	t.Logf("removed %d containers behind berth's back in %s", len(refs), time.Since(rm).Round(time.Millisecond))
}

// adopt writes inst, a pending instance made by another backend's manager,
// into this rig's store under the same id, with a create item and first
// event as the manager writes them, so that both stores describe the same
// containers.
func (r *rig) adopt(inst container.Instance) {
	r.t.Helper()
	now := time.Now().UTC()
	_, err := r.store.CreateInstance(context.Background(), store.CreateParams{
		Instance: inst,
		Outbox: container.OutboxItem{ID: container.NewID(), InstanceID: inst.ID, Op: container.OpCreate, InstanceVersion: inst.Version,
			State: container.OutboxPending, CreatedAt: now, UpdatedAt: now},
		Event: container.Event{InstanceID: inst.ID, Type: container.EventCreateRequested, To: fsm.Pending, At: now, Actor: inst.Owner},
	})
	if err != nil {
		r.t.Fatalf("adopting %s: %v", inst.ID, err)
	}
}
