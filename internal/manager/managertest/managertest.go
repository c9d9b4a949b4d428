// Package managertest holds what tests of the layers above the manager
// (worker, reconciler) do through it more than once.
package managertest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// Create makes an instance from template tpl as c, as the API would: it is
// pending with its create item in the outbox. A failure fails the test.
func Create(t testing.TB, m *manager.Manager, c identity.Caller, tpl string) container.Instance {
	t.Helper()
	res, err := m.CreateByTemplate(context.Background(), c, manager.CreateRequest{Template: tpl}, nil, "req-"+tpl)
	if err != nil {
		t.Fatalf("creating from template %s: %v", tpl, err)
	}
	return res.Instance
}

// Move takes instance id to status to through the manager's verbs and
// intents, as the API (as c), a worker and the state loop would: a
// requested status (start_pending, stop_pending, delete_pending) by c's
// request, an in-progress one (creating, starting, stopping, deleting) by a
// worker's claim, running by a start observed. Every such change is
// written through the manager, so it is delivered to the subscriptions it
// matches. It returns the instance as moved; a failure, or a status Move
// cannot reach, fails the test.
func Move(t testing.TB, m *manager.Manager, c identity.Caller, id string, to fsm.Status) container.Instance {
	t.Helper()
	ctx := context.Background()
	var err error
	switch to {
	case fsm.StartPending:
		_, err = m.Start(ctx, c, id, nil, "req-start-"+id)
	case fsm.StopPending:
		_, err = m.Stop(ctx, c, id, nil, "req-stop-"+id)
	case fsm.DeletePending:
		_, err = m.Delete(ctx, c, id, nil, "req-delete-"+id)
	case fsm.Running:
		_, err = m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedStarted})
	default:
		op, ok := manager.WaitsFor(to)
		if !ok {
			t.Fatalf("managertest.Move: no verb moves an instance to %s", to)
		}
		_, err = m.ClaimItem(ctx, id, op, "", "", time.Time{})
	}
	if err != nil {
		t.Fatalf("moving %s to %s: %v", id, to, err)
	}
	inst, err := m.Get(ctx, identity.Caller{Admin: true}, id)
	if err != nil {
		t.Fatalf("reading %s after its move to %s: %v", id, to, err)
	}
	if inst.Status != to {
		t.Fatalf("moving %s to %s: it is %s", id, to, inst.Status)
	}
	return inst
}
