package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// testResumedCreateStartsOnce: a create taken up again after an attempt
// whose start reached the engine (its answer lost) finds the container
// already run and ended, its failure recorded by the state loop. The
// resumed create must not start it a second time: TestServeChaos saw that
// as "runtime reported started while failed".
func testResumedCreateStartsOnce(t *testing.T, r *rig) {
	ctx := context.Background()
	inst := r.create("exit3")
	it := r.item(inst.ID, container.OpCreate)
	// Attempt 1 claims the instance and fails before the engine.
	r.rt.createFails.Store(1)
	if res := r.w.Process(ctx, delivery(t, it, 1)); res.Ack {
		t.Fatalf("attempt 1: %+v", res)
	}
	r.wantStatus(inst.ID, fsm.Creating)
	// Between attempt 2's read and its Create, the lost start of an
	// earlier attempt runs the container to its end.
	var firstStart string
	r.rt.beforeCreate = func() {
		claimed := r.get(inst.ID)
		ref, err := r.engine.Create(ctx, claimed)
		if err == nil {
			err = r.engine.Start(ctx, ref)
		}
		if err != nil {
			t.Errorf("the earlier attempt's create and start: %v", err)
			return
		}
		failed := r.eventually(inst.ID, fsm.Failed)
		if failed.ExitCode == nil || *failed.ExitCode != 3 {
			t.Errorf("recorded exit %v, want 3", failed.ExitCode)
		}
		st, err := r.engine.Inspect(ctx, ref)
		if err != nil || st.StartedAt == nil {
			t.Errorf("engine after the run: %+v, %v", st, err)
			return
		}
		firstStart = st.StartedAt.String()
	}
	res := r.w.Process(ctx, delivery(t, it, 2))
	if !res.Ack {
		t.Fatalf("attempt 2: %+v", res)
	}
	st, err := r.engine.Inspect(ctx, runtime.Ref{InstanceID: inst.ID})
	if err != nil || st.StartedAt == nil {
		t.Fatalf("engine after attempt 2: %+v, %v", st, err)
	}
	if got := st.StartedAt.String(); got != firstStart {
		t.Fatalf("the container was started again by the resumed create: started %s, first run %s", got, firstStart)
	}
	r.wantStatus(inst.ID, fsm.Failed)
	page, err := r.store.ListEvents(ctx, inst.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Items {
		if e.Type == container.EventTransitionReject || strings.Contains(e.Message, "not allowed") {
			t.Errorf("event %s: %s", e.Type, e.Message)
		}
	}
}
