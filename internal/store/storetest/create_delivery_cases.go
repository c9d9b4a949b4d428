package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testCreateDeliveries: a create's webhook deliveries (from no status to
// pending) are written with it, each carrying the create's event number
// (1) and the instance as created; a create that does not commit writes
// none, and a delivery id already taken makes the whole create fail.
func testCreateDeliveries(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	deliveries := func(ids ...string) []container.OutboxItem {
		out := make([]container.OutboxItem, len(ids))
		for i, id := range ids {
			out[i] = container.OutboxItem{ID: id, Op: container.OpDeliver,
				Delivery: &container.Delivery{WebhookID: "wh-" + id, To: fsm.Pending}}
		}
		return out
	}
	ids := []string{newID(), newID()}
	p := NewCreate(c, "alice")
	p.Deliveries = deliveries(ids...)
	inst := mustCreate(t, s, p)
	for _, id := range ids {
		ob, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatalf("delivery %s: %v", id, err)
		}
		d := ob.Delivery
		switch {
		case ob.Op != container.OpDeliver || ob.State != container.OutboxPending || ob.InstanceID != inst.ID || ob.InstanceVersion != 1:
			t.Errorf("delivery item = %+v; want a pending deliver item for %s@1", ob, inst.ID)
		case d == nil || d.WebhookID != "wh-"+id || d.From != "" || d.To != fsm.Pending:
			t.Errorf("delivery = %+v; want the create (\"\" → pending)", d)
		case d.Seq != 1 || d.Seq != inst.EventSeq:
			t.Errorf("delivery seq = %d; want the create's event, 1", d.Seq)
		case d.Instance == nil || d.Instance.ID != inst.ID || d.Instance.Status != fsm.Pending || d.Instance.Version != 1 || d.Instance.Owner != "alice":
			t.Errorf("delivery instance = %+v; want it as created", d.Instance)
		}
	}
	page, err := s.ListDeliveries(ctx, "wh-"+ids[0], "", 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != ids[0] {
		t.Errorf("ListDeliveries(wh-%s) = %v, %v; want the create's delivery", ids[0], outboxIDs(page.Items), err)
	}

	// A refused create (its id taken) writes none of its deliveries.
	dup := NewCreate(c, "alice")
	dup.Instance.ID = inst.ID
	dup.Outbox.InstanceID = inst.ID
	dup.Deliveries = deliveries(newID())
	if _, err := s.CreateInstance(ctx, dup); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("create with a taken id = %v; want ErrAlreadyExists", err)
	}
	if _, err := s.GetOutbox(ctx, dup.Deliveries[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused create's delivery was written: %v", err)
	}
	// A delivery id taken makes the whole create fail: no instance.
	taken := NewCreate(c, "alice")
	taken.Deliveries = deliveries(ids[0])
	if _, err := s.CreateInstance(ctx, taken); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("create reusing a delivery id = %v; want ErrAlreadyExists", err)
	}
	if _, err := s.GetInstance(ctx, taken.Instance.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed create wrote its instance: %v", err)
	}
	if _, err := s.GetOutbox(ctx, taken.Outbox.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed create wrote its create item: %v", err)
	}
}
