package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestClaimCarriesTheDispatchMark: a worker's claim of the create marks
// its still-pending outbox item dispatched in the same write (the local
// server's dispatcher writes no mark), through lost races too; a claim of
// a create already in progress writes nothing. On both stores.
func TestClaimCarriesTheDispatchMark(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		rs, m := racingManager(t, b)
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		inst := res.Instance
		pending, err := rs.ListUndispatched(ctx, time.Now().Add(time.Minute), 100)
		if err != nil {
			t.Fatal(err)
		}
		var item container.OutboxItem
		for _, it := range pending {
			if it.InstanceID == inst.ID {
				item = it
			}
		}
		if item.ID == "" {
			t.Fatalf("no pending create item for %s in %+v", inst.ID, pending)
		}
		rs.races.Store(1)
		claimed, err := m.ClaimItem(ctx, inst.ID, container.OpCreate, "node-a", item.ID, time.Now())
		if err != nil || claimed.Status != fsm.Creating {
			t.Fatalf("ClaimItem: %s, %v", claimed.Status, err)
		}
		ob, err := rs.GetOutbox(ctx, item.ID)
		if err != nil || ob.State != container.OutboxDispatched || ob.DispatchedAt == nil {
			t.Fatalf("item after the claim: %+v, %v; want it dispatched by the claim's write", ob, err)
		}
		again, err := m.ClaimItem(ctx, inst.ID, container.OpCreate, "", item.ID, time.Now())
		if err != nil || again.Version != claimed.Version {
			t.Fatalf("claim of a create in progress: version %d, %v; want it accepted as it is (%d)", again.Version, err, claimed.Version)
		}
	})
}
