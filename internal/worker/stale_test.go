package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// named creates a member of group with an explicit name for caller c.
func (r *rig) named(c identity.Caller, tpl, name, group string) container.Instance {
	r.t.Helper()
	res, err := r.m.CreateByTemplate(context.Background(), c, manager.CreateRequest{Template: tpl, Name: name, Group: group}, nil, "req-"+name)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Instance
}

// TestStaleMembers: container.cleanup_dag_node_containers_before_start, on
// both stores and a real Docker engine. A new member of a group is created
// only once the group's stale members — the same owner's members of that
// group with the same name (the node's containers of an earlier run),
// failed or still running — are deleted; other nodes, other groups and
// other owners' members are left alone, and the deletes are asked once
// however often the create is delivered. With the key false nothing is
// deleted.
func TestStaleMembers(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		for _, on := range []bool{true, false} {
			t.Run(map[bool]string{true: "cleanup_dag_node_containers_before_start=true", false: "cleanup_dag_node_containers_before_start=false"}[on], func(t *testing.T) {
				t.Parallel()
				testStale(t, newRigWith(t, b, 0, manager.GroupPolicies{ResetAllowed: on}), on)
			})
		}
	})
}

func testStale(t *testing.T, r *rig, on bool) {
	first := r.named(alice, "exit3", "step-a", "dag")
	r.mustRun(first.ID, container.OpCreate, "done")
	r.settled(first.ID, fsm.Failed)
	otherNode := r.named(alice, "sleeper", "step-b", "dag")
	r.mustRun(otherNode.ID, container.OpCreate, "done")
	otherGroup := r.named(alice, "exit3", "step-a", "nightly")
	bobs := r.named(bob, "exit3", "step-a", "dag")

	second := r.named(alice, "sleeper", "step-a", "dag")
	if !on {
		r.mustRun(second.ID, container.OpCreate, "done")
		r.wantStatus(first.ID, fsm.Failed)
		r.wantStatus(second.ID, fsm.Running)
		return
	}
	// A failed namesake is deleted before the new member is created.
	r.createAfterStale(second, first)
	// So are a running one and a queued one.
	queued := r.named(alice, "sleeper", "step-a", "dag")
	third := r.named(alice, "sleeper", "step-a", "dag")
	r.createAfterStale(third, second, queued)

	r.wantStatus(otherNode.ID, fsm.Running)
	r.wantStatus(otherGroup.ID, fsm.Pending)
	r.wantStatus(bobs.ID, fsm.Pending)
	// The newest member is no one's stale member.
	if stale, err := r.m.ClearStaleMembers(context.Background(), third, "req-stale-check"); err != nil || len(stale) != 0 {
		t.Fatalf("stale members of the newest: %+v %v", stale, err)
	}
}

// createAfterStale runs next's create while its stale members are still
// there (twice: it waits, and asks their deletes once), then their deletes,
// then the create again, which makes next's container.
func (r *rig) createAfterStale(next container.Instance, stale ...container.Instance) {
	r.t.Helper()
	t := r.t
	want := fmt.Sprintf("waiting for %d stale member(s)", len(stale))
	for attempt := 1; attempt <= 2; attempt++ {
		res := r.w.Process(context.Background(), delivery(t, r.item(next.ID, container.OpCreate), attempt))
		if res.Ack || !strings.Contains(res.Reason, want) {
			t.Fatalf("create %d of %s with stale members left: %+v", attempt, next.ID, res)
		}
		r.wantStatus(next.ID, fsm.Pending)
		for _, st := range r.containers() {
			if st.InstanceID == next.ID {
				t.Fatalf("a container for %s before its stale members were deleted: %+v", next.ID, st)
			}
		}
	}
	for _, s := range stale {
		in := r.wantStatus(s.ID, fsm.DeletePending)
		if !strings.HasPrefix(in.StatusReason, manager.StaleReason) || !strings.Contains(in.StatusReason, next.ID) {
			t.Fatalf("stale member's reason: %q", in.StatusReason)
		}
		if n := r.items(s.ID, container.OpDelete); n != 1 {
			t.Fatalf("%d delete items for stale member %s after two deliveries of the create, want 1", n, s.ID)
		}
		r.mustRun(s.ID, container.OpDelete, "done")
		r.gone(s.ID)
	}
	r.mustRun(next.ID, container.OpCreate, "done")
	r.wantStatus(next.ID, fsm.Running)
}
