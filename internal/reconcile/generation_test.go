package reconcile_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
)

// takeoverRig is a store and a manager on a clock the test moves.
type takeoverRig struct {
	t     *testing.T
	clock *storetest.Clock
	s     store.Store
	m     *manager.Manager
}

func newTakeoverRig(t *testing.T, b teststores.Backend) *takeoverRig {
	clock := storetest.NewClock()
	s := b.Open(t, clock.Now)
	m := manager.New(manager.Options{Store: s, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return &takeoverRig{t: t, clock: clock, s: s, m: m}
}

// member writes a pending instance of group (none when empty): a create
// that a deployment left queued.
func (r *takeoverRig) member(group string) container.Instance {
	r.t.Helper()
	p := storetest.NewCreate(r.clock, "alice")
	p.Instance.Group = group
	in, err := r.s.CreateInstance(context.Background(), p)
	if err != nil {
		r.t.Fatal(err)
	}
	return in
}

func (r *takeoverRig) takeover(gen string, interrupt bool, st reconcile.DeploymentStore) *reconcile.Takeover {
	if st == nil {
		st = r.s
	}
	return &reconcile.Takeover{Generation: gen, Interrupt: interrupt, Store: st, Groups: r.m, Clock: r.clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (r *takeoverRig) run(tk *reconcile.Takeover, want int) {
	r.t.Helper()
	if n, err := tk.Run(context.Background()); err != nil || n != want {
		r.t.Fatalf("takeover %s: failed %d members, %v; want %d", tk.Generation, n, err, want)
	}
}

// status returns the instance's status, and its failed events.
func (r *takeoverRig) status(id string) (fsm.Status, int) {
	r.t.Helper()
	ctx := context.Background()
	in, err := r.s.GetInstance(ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	evs, err := r.s.ListEvents(ctx, id, "", 100)
	if err != nil {
		r.t.Fatal(err)
	}
	failed := 0
	for _, ev := range evs.Items {
		if ev.Type == container.EventFailed {
			failed++
			if !strings.HasPrefix(ev.Message, manager.InterruptedReason) {
				r.t.Fatalf("failed event of %s: %q", id, ev.Message)
			}
		}
	}
	return in.Status, failed
}

func (r *takeoverRig) want(id string, status fsm.Status, failedEvents int) {
	r.t.Helper()
	if st, n := r.status(id); st != status || n != failedEvents {
		r.t.Fatalf("instance %s is %s with %d failed events, want %s with %d", id, st, n, status, failedEvents)
	}
}

// TestTakeover: container.recover_running_dag_on_start on AWS, on both
// stores. A new deployment generation is recorded by the first reconciler
// that sees it; with the key false the group members the earlier
// deployment left mid-operation are failed, once, whatever the number of
// reconcilers, and never a member the new deployment changed; with the key
// true nothing is failed.
func TestTakeover(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("recover_running_dag_on_start=false", func(t *testing.T) {
			t.Parallel()
			r := newTakeoverRig(t, b)
			old, loner := r.member("dag"), r.member("")
			r.clock.Advance(time.Minute)
			r.run(r.takeover("gen-1", true, nil), 1)
			r.want(old.ID, fsm.Failed, 1)
			r.want(loner.ID, fsm.Pending, 0)
			// The new deployment's own work, and later reconcilers of it.
			fresh := r.member("dag")
			r.run(r.takeover("gen-1", true, nil), 0)
			r.want(fresh.ID, fsm.Pending, 0)
			// The next deployment takes over from this one.
			r.clock.Advance(time.Minute)
			r.run(r.takeover("gen-2", true, nil), 1)
			r.want(fresh.ID, fsm.Failed, 1)
			r.want(old.ID, fsm.Failed, 1)
			d, err := r.s.GetDeployment(context.Background())
			if err != nil || d.Generation != "gen-2" || !d.Settled {
				t.Fatalf("deployment record: %+v %v", d, err)
			}
		})
		t.Run("recover_running_dag_on_start=true", func(t *testing.T) {
			t.Parallel()
			r := newTakeoverRig(t, b)
			old := r.member("dag")
			r.clock.Advance(time.Minute)
			r.run(r.takeover("gen-1", false, nil), 0)
			r.want(old.ID, fsm.Pending, 0)
			d, err := r.s.GetDeployment(context.Background())
			if err != nil || d.Generation != "gen-1" || !d.Settled {
				t.Fatalf("deployment record: %+v %v", d, err)
			}
		})
		t.Run("reconcilers racing", func(t *testing.T) {
			t.Parallel()
			r := newTakeoverRig(t, b)
			var members []container.Instance
			for range 5 {
				members = append(members, r.member("dag"))
			}
			r.clock.Advance(time.Minute)
			const reconcilers = 6
			var wg sync.WaitGroup
			counts, errs := make([]int, reconcilers), make([]error, reconcilers)
			for i := range reconcilers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					counts[i], errs[i] = r.takeover("gen-1", true, nil).Run(context.Background())
				}()
			}
			wg.Wait()
			total := 0
			for i := range reconcilers {
				if errs[i] != nil {
					t.Fatalf("reconciler %d: %v", i, errs[i])
				}
				total += counts[i]
			}
			if total != len(members) {
				t.Fatalf("%d members failed in all, want %d", total, len(members))
			}
			for _, in := range members {
				r.want(in.ID, fsm.Failed, 1)
			}
			if d, err := r.s.GetDeployment(context.Background()); err != nil || d.Version != 2 || !d.Settled {
				t.Fatalf("deployment record after the race: %+v %v; want recorded once and settled once (version 2)", d, err)
			}
		})
		t.Run("a reconciler ends half-way", func(t *testing.T) {
			t.Parallel()
			r := newTakeoverRig(t, b)
			old := r.member("dag")
			r.clock.Advance(time.Minute)
			lost := &failSettle{DeploymentStore: r.s}
			if _, err := r.takeover("gen-1", true, lost).Run(context.Background()); !errors.Is(err, errSettle) {
				t.Fatalf("takeover whose settle fails: %v", err)
			}
			r.want(old.ID, fsm.Failed, 1)
			// Created by the new deployment before the next reconciler
			// settles the takeover: not the earlier deployment's.
			r.clock.Advance(time.Second)
			fresh := r.member("dag")
			r.run(r.takeover("gen-1", true, nil), 0)
			r.want(fresh.ID, fsm.Pending, 0)
			r.want(old.ID, fsm.Failed, 1)
		})
	})
}

var errSettle = errors.New("injected: the settle write is lost")

// failSettle fails the write that settles a takeover, as a reconciler that
// ends after interrupting and before recording it.
type failSettle struct{ reconcile.DeploymentStore }

func (f *failSettle) PutDeployment(ctx context.Context, d store.Deployment) (store.Deployment, error) {
	if d.Settled {
		return store.Deployment{}, errSettle
	}
	return f.DeploymentStore.PutDeployment(ctx, d)
}
