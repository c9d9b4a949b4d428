package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
)

// A group member the reconciler fails for making no progress gets
// dag_node_cleanup_on_failed in the same write, as an outbox item; an
// instance without a group gets none.
func TestStuckMemberGetsFailurePolicy(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		m := manager.New(manager.Options{Store: r.store, MaxPending: 100,
			Groups: manager.GroupPolicies{OnFailed: config.CleanupDelete}})
		var insts []container.Instance
		for _, group := range []string{"dag", ""} {
			res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "sleeper", Group: group}, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			insts = append(insts, r.creating(res.Instance, node))
			r.dispatchAll(res.Instance.ID)
		}
		r.advance(time.Hour)
		rep := r.run(r.reconciler(func(o *reconcile.Options) { o.MaxRequeues = -1; o.Manager = m }))
		if rep.FailedStuck != 2 {
			t.Fatalf("report %+v", rep)
		}
		member, loner := r.get(insts[0].ID), r.get(insts[1].ID)
		wantStatus(t, member, fsm.Failed)
		wantStatus(t, loner, fsm.Failed)
		if !strings.Contains(member.StatusReason, "dag_node_cleanup_on_failed=delete") || strings.Contains(loner.StatusReason, "cleanup") {
			t.Fatalf("reasons: %q, %q", member.StatusReason, loner.StatusReason)
		}
		items, err := r.store.ListUndispatched(ctx, time.Now().Add(2*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]int{}
		for _, it := range items {
			if it.Op == container.OpCleanupDelete {
				found[it.InstanceID]++
			}
		}
		if found[member.ID] != 1 || found[loner.ID] != 0 {
			t.Fatalf("cleanup items: %v", found)
		}
	})
}
