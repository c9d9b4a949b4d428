package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestIntentsGuarded: the workers' and the reconciler's intents are
// written only while they still apply — at the version the caller read
// (Requeue, Fail with a version), in the statuses they need (Claim,
// Placed, Deleted, Fail.While) — else manager.ErrMoved or nothing, and
// nothing is written; a lost race is decided again by the manager's one
// loop. On both stores.
func TestIntentsGuarded(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		ctx := context.Background()
		rs, m := racingManager(t, b)
		create := func() container.Instance {
			t.Helper()
			res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			return res.Instance
		}
		get := func(id string) container.Instance {
			t.Helper()
			inst, err := rs.GetInstance(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return inst
		}
		at := time.Now().Add(time.Hour).UTC() // the caller's clock, ahead of the manager's

		// Claim: only from the requested status; again when in progress;
		// through lost races.
		inst := create()
		if _, err := m.Claim(ctx, inst.ID, container.OpStop, "", at); !errors.Is(err, manager.ErrMoved) || !strings.Contains(err.Error(), "pending") {
			t.Fatalf("claiming a stop of a pending instance: %v, want ErrMoved naming its status", err)
		}
		rs.races.Store(2)
		claimed, err := m.Claim(ctx, inst.ID, container.OpCreate, "node-a", at)
		if err != nil || claimed.Status != fsm.Creating || claimed.RuntimeNodeName != "node-a" {
			t.Fatalf("claim after 2 lost races: %s on %q, %v", claimed.Status, claimed.RuntimeNodeName, err)
		}
		if again, err := m.Claim(ctx, inst.ID, container.OpCreate, "", at); err != nil || again.Version != claimed.Version {
			t.Fatalf("claim of a create in progress: version %d, %v; want it accepted as it is (%d)", again.Version, err, claimed.Version)
		}
		if err := m.Placed(ctx, inst.ID, "rid-1", "node-b"); err != nil {
			t.Fatal(err)
		}
		if got := get(inst.ID); got.RuntimeID != "rid-1" || got.RuntimeNodeName != "node-b" {
			t.Fatalf("placed: %q on %q", got.RuntimeID, got.RuntimeNodeName)
		}

		// Requeue: at the version read only.
		listed := get(inst.ID)
		if _, err := m.Requeue(ctx, claimed, container.OpCreate, "again", "req-stale", at); !errors.Is(err, manager.ErrMoved) {
			t.Fatalf("requeue at an old version: %v, want ErrMoved", err)
		}
		if got := get(inst.ID); got.Version != listed.Version {
			t.Fatalf("a requeue at an old version wrote: version %d → %d", listed.Version, got.Version)
		}
		itemID, err := m.Requeue(ctx, listed, container.OpCreate, "again", "req-1", at)
		if err != nil {
			t.Fatal(err)
		}
		item, err := rs.GetOutbox(ctx, itemID)
		if err != nil || item.Op != container.OpCreate || item.RequestID != "req-1" || item.InstanceVersion != listed.Version+1 {
			t.Fatalf("requeued item: %+v, %v", item, err)
		}
		requeued := get(inst.ID)
		if requeued.Status != fsm.Creating || requeued.StatusReason != "again" {
			t.Fatalf("requeued instance: %s (%s)", requeued.Status, requeued.StatusReason)
		}

		// Fail: not outside While, not at an old version; then failed once.
		if failed, err := m.Fail(ctx, inst.ID, manager.Failure{Reason: "x", At: at, While: []fsm.Status{fsm.Running}}); failed || err != nil {
			t.Fatalf("fail outside While: %v, %v; want nothing written", failed, err)
		}
		if _, err := m.Fail(ctx, inst.ID, manager.Failure{Reason: "x", At: at, Version: listed.Version}); !errors.Is(err, manager.ErrMoved) {
			t.Fatalf("fail at an old version: %v, want ErrMoved", err)
		}
		if failed, err := m.Fail(ctx, inst.ID, manager.Failure{Reason: "boom", At: at, Version: requeued.Version}); !failed || err != nil {
			t.Fatalf("fail: %v, %v", failed, err)
		}
		got := get(inst.ID)
		if got.Status != fsm.Failed || got.StatusReason != "boom" || got.FinishedAt == nil || !got.FinishedAt.Equal(at) {
			t.Fatalf("failed instance: %s (%s) finished %v, want failed (boom) at %v", got.Status, got.StatusReason, got.FinishedAt, at)
		}
		if failed, err := m.Fail(ctx, inst.ID, manager.Failure{Reason: "again", At: at}); failed || err != nil {
			t.Fatalf("failing a failed instance: %v, %v; want nothing written", failed, err)
		}

		// Deleted: only a deleting instance.
		if err := m.Deleted(ctx, inst.ID, "", nil, at); !errors.Is(err, manager.ErrMoved) {
			t.Fatalf("deleted while failed: %v, want ErrMoved", err)
		}
		if _, err := m.Delete(ctx, identity.Caller{User: "alice"}, inst.ID, nil, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Claim(ctx, inst.ID, container.OpDelete, "", at); err != nil {
			t.Fatal(err)
		}
		if err := m.Deleted(ctx, inst.ID, "", nil, at); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Claim(ctx, inst.ID, container.OpDelete, "", at); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claim of a deleted instance: %v, want store.ErrNotFound", err)
		}
	})
}
