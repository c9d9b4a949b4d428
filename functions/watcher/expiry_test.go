package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/testenv"
)

// giveLifetime sets inst's expires_at to at (on_expiry stop), as a create
// or an extension would.
func (r *rig) giveLifetime(ctx context.Context, inst container.Instance, at time.Time) container.Instance {
	r.t.Helper()
	out, err := r.st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: inst.Status,
		Update: func(i *container.Instance) {
			i.ExpiresAt = &at
			i.Lifetime = &container.InstanceLifetime{OnExpiry: container.ExpiryStop, Default: "1m0s"}
		}})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// retainedStop makes an instance that stops now and is to be deleted
// after retention (no container: the stop is the store's), as a worker's
// stop under a template's retention would.
func (r *rig) retainedStop(ctx context.Context, retention string) container.Instance {
	r.t.Helper()
	m := manager.New(manager.Options{Store: r.st, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "kept",
		Runtime: "docker", Image: testenv.TestImage(r.t), Retention: &container.Retention{Stopped: retention}}); err != nil {
		r.t.Fatal(err)
	}
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "kept"}, nil, "")
	if err != nil {
		r.t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range []fsm.Status{fsm.Creating, fsm.Running, fsm.Stopped} {
		if inst, err = r.st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			r.t.Fatal(err)
		}
	}
	return inst
}

// TestWatcherExpires: on AWS the watcher's invocation carries out the
// deadlines that fall while it watches, within the bound: a lifetime known
// when it began, one set while it ran, and the retention of an instance
// that stopped while it ran (the last two heard of by its next read of the
// deadline index). The expiry is the normal stop request, the retention's
// the normal delete request.
func TestWatcherExpires(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	known, _ := r.running(ctx)
	known = r.giveLifetime(ctx, known, time.Now().Add(6*time.Second))
	stop := r.invoke(ctx, time.Minute)
	defer stop()
	later, _ := r.running(ctx)
	// Set closer to its time than one read of the index to the next: heard
	// of late, still within the bound.
	later = r.giveLifetime(ctx, later, time.Now().Add(expiryReload/2))
	retained := r.retainedStop(ctx, "3s")
	for _, inst := range []container.Instance{known, later, retained} {
		if inst.ID == retained.ID {
			r.status(ctx, inst.ID, fsm.DeletePending, 45*time.Second)
			ev := r.lastEvent(ctx, inst.ID)
			if ev.Type != container.EventDeleteRequested || ev.Message != container.ReasonRetentionReached || ev.Actor != container.ActorSystem {
				t.Fatalf("the retention's event %+v", ev)
			}
			lag := ev.At.Sub(*inst.DeleteAt)
			if lag < 0 || lag > 5*time.Second {
				t.Errorf("%s deleted %s after its delete_at, want within [0, 5s]", inst.ID, lag)
			}
			t.Logf("retention lag through the watcher: %s", lag)
			continue
		}
		r.status(ctx, inst.ID, fsm.StopPending, 45*time.Second)
		last := r.lastEvent(ctx, inst.ID)
		if last.Type != container.EventStopRequested || last.Message != container.ReasonLifetimeReached || last.Actor != container.ActorSystem {
			t.Fatalf("the expiry's event %+v", last)
		}
		lag := last.At.Sub(*inst.ExpiresAt)
		if lag < 0 || lag > 5*time.Second {
			t.Errorf("%s stopped %s after its expires_at, want within [0, 5s]", inst.ID, lag)
		}
		t.Logf("expiry lag through the watcher: %s", lag)
	}
}

// lastEvent is the newest event of id's history.
func (r *rig) lastEvent(ctx context.Context, id string) container.Event {
	r.t.Helper()
	page, err := r.st.ListEvents(ctx, id, "", 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return page.Items[len(page.Items)-1]
}
