package main

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
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

// TestWatcherExpires: on AWS the watcher's invocation carries out the
// lifetimes that fall while it watches, within the bound of expires_at:
// one known when it began, and one set while it ran (heard of by its next
// read of the active instances). The expiry is the normal stop request.
func TestWatcherExpires(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	known, _ := r.running(ctx)
	known = r.giveLifetime(ctx, known, time.Now().Add(6*time.Second))
	stop := r.invoke(ctx, time.Minute)
	defer stop()
	later, _ := r.running(ctx)
	later = r.giveLifetime(ctx, later, time.Now().Add(expiryReload+5*time.Second))
	for _, inst := range []container.Instance{known, later} {
		r.status(ctx, inst.ID, fsm.StopPending, 45*time.Second)
		page, err := r.st.ListEvents(ctx, inst.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		last := page.Items[len(page.Items)-1]
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
