package storetest

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testGroupDeliveries: a group finish's delivery rides on a member's write
// (a status change, or a write of fields alone) and is stored with the
// finish as it was given, the group and every member's action, and
// listed under its subscription; it takes no instance snapshot nor seq.
func testGroupDeliveries(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	p := NewCreate(c, "alice")
	p.Instance.Group = "dag-1"
	inst := mustCreate(t, s, p)
	finish := container.GroupResult{Group: "dag-1", Owner: "alice", Outcome: "succeeded", Policy: "none",
		Members: []container.MemberAction{{ID: inst.ID, Name: inst.Name, Status: fsm.Pending, Action: container.ActionCancelled}}}
	item := func(id string) container.OutboxItem {
		g := finish
		return container.OutboxItem{ID: id, Op: container.OpDeliver, Delivery: &container.Delivery{WebhookID: "wh-g", Group: &g}}
	}
	cases := []struct {
		name     string
		from, to fsm.Status
	}{
		{"with a status change", fsm.Pending, fsm.Failed},
		{"with a write of fields alone", fsm.Failed, fsm.Failed},
	}
	var ids []string
	for _, tc := range cases {
		cur := mustGet(t, s, inst.ID)
		id := newID()
		next, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: cur.Version, From: tc.from, To: tc.to,
			Deliveries: []container.OutboxItem{item(id)}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ob, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatalf("%s: the finish's delivery: %v", tc.name, err)
		}
		d := ob.Delivery
		switch {
		case ob.Op != container.OpDeliver || ob.State != container.OutboxPending || ob.InstanceID != inst.ID || ob.InstanceVersion != next.Version:
			t.Errorf("%s: item = %+v; want a pending deliver item on %s@%d", tc.name, ob, inst.ID, next.Version)
		case d == nil || d.Group == nil || d.WebhookID != "wh-g" || d.From != "" || d.To != "":
			t.Errorf("%s: delivery = %+v; want the group finish", tc.name, d)
		case d.Group.Group != "dag-1" || d.Group.Owner != "alice" || d.Group.Outcome != "succeeded" || len(d.Group.Members) != 1 ||
			d.Group.Members[0] != finish.Members[0]:
			t.Errorf("%s: group = %+v; want %+v", tc.name, d.Group, finish)
		case d.Instance != nil || d.Seq != 0:
			t.Errorf("%s: a group delivery took the member's snapshot (seq %d, %+v)", tc.name, d.Seq, d.Instance)
		}
		ids = append([]string{id}, ids...)
	}
	if got, _ := listAllDeliveries(t, s, "wh-g", 10); len(got) != 2 || got[0] != ids[0] || got[1] != ids[1] {
		t.Errorf("ListDeliveries(wh-g) = %v; want %v", got, ids)
	}
}
