package reconcile_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestMeasurePass50 times passes over 50 active instances on the real
// engine, per store backend: the pass that brings 50 creating instances to
// running (50 OnEvent transitions, 50 Inspects), the steady pass with
// nothing to do (1 List, 1 ListActive walk, the admission repair), and the
// pass that finds all 50 containers removed. It starts 50 containers per
// backend (≈ 6 s each here); the timings are logged (-v), the outcomes
// asserted.
func TestMeasurePass50(t *testing.T) {
	t.Parallel()
	const n = 50
	// One backend after the other, so that neither pass is timed while the
	// other backend's 50 containers start.
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		r := newRig(t, b.Open(t, time.Now))
		insts := make([]container.Instance, n)
		refs := make([]runtime.Ref, n)
		for i := range insts {
			insts[i] = r.creating(r.create("sleeper"), node)
		}
		setup := time.Now()
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
		t.Logf("%s: setup: %d containers started in %s", b.Name, n, time.Since(setup).Round(time.Millisecond))

		start := time.Now()
		rep := r.run(r.reconciler())
		t.Logf("%s: pass with %d creating → running: %s (report duration %d ms)", b.Name, rep.Started, time.Since(start).Round(time.Millisecond), rep.DurationMS)
		if rep.Started != n {
			t.Fatalf("started %d, want %d: %+v", rep.Started, n, rep)
		}

		var steady []time.Duration
		for range 5 {
			start = time.Now()
			rep = r.run(r.reconciler())
			steady = append(steady, time.Since(start))
			if rep.Actions() != 0 || rep.Instances != n {
				t.Fatalf("steady pass acted: %+v", rep)
			}
		}
		slices.Sort(steady)
		t.Logf("%s: steady pass over %d running instances: min %s, median %s, max %s", b.Name, n,
			steady[0].Round(time.Microsecond), steady[len(steady)/2].Round(time.Microsecond), steady[len(steady)-1].Round(time.Microsecond))

		rm := time.Now()
		for _, ref := range refs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				_ = r.rt.Delete(testenv.Context(t, time.Minute), ref)
			})
		}
		wg.Wait()
		t.Logf("%s: removed %d containers behind berth's back in %s", b.Name, n, time.Since(rm).Round(time.Millisecond))
		r.advance(time.Hour)
		start = time.Now()
		rep = r.run(r.reconciler())
		t.Logf("%s: pass with %d running → failed (destroyed): %s", b.Name, rep.Destroyed, time.Since(start).Round(time.Millisecond))
		if rep.Destroyed != n {
			t.Fatalf("destroyed %d, want %d", rep.Destroyed, n)
		}
		for _, inst := range insts[:3] {
			wantStatus(t, r.get(inst.ID), fsm.Failed)
		}
	})
}
