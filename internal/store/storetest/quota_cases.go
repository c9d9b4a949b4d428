package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

var (
	userAlice = store.QuotaSubject{Kind: store.QuotaUser, Name: "alice"}
	teamData  = store.QuotaSubject{Kind: store.QuotaTeam, Name: "data"}
)

func usage(t testing.TB, s store.Store, sub store.QuotaSubject) container.QuotaUse {
	t.Helper()
	u, err := s.QuotaUsage(context.Background(), sub)
	if err != nil {
		t.Fatalf("QuotaUsage(%s): %v", sub, err)
	}
	return u
}

func wantUsage(t testing.TB, s store.Store, sub store.QuotaSubject, want container.QuotaUse, when string) {
	t.Helper()
	if got := usage(t, s, sub); got != want {
		t.Errorf("%s: use of %s = %+v, want %+v", when, sub, got, want)
	}
}

// teamCreate is NewCreate for owner in team (NewCreate's resources: 0.5
// CPU, 64Mi).
func teamCreate(c *Clock, owner, team string) store.CreateParams {
	p := NewCreate(c, owner)
	p.Instance.Team = team
	return p
}

// testQuotaLifecycle: a create reserves an instance, a pending create and
// a run with its CPU and memory, for its owner and its team; each status
// change moves exactly the difference, a repeated (redelivered) change or
// a field-only update moves nothing, and a delete releases the rest.
func testQuotaLifecycle(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	run := container.QuotaUse{Instances: 1, Running: 1, CPUMillis: 500, MemoryBytes: 64 << 20}
	created := run
	created.Pending = 1
	inst := mustCreate(t, s, teamCreate(c, "alice", "data"))
	wantUsage(t, s, userAlice, created, "created")
	wantUsage(t, s, teamData, created, "created (team)")
	creating := move(t, s, c, inst, fsm.Creating)
	wantUsage(t, s, userAlice, created, "creating")
	running := move(t, s, c, creating, fsm.Running)
	wantUsage(t, s, userAlice, run, "running")
	// The worker's redelivered Creating → Running is refused and moves nothing.
	_, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: creating.Version, From: fsm.Creating, To: fsm.Running})
	wantErr(t, "redelivered transition", err, store.ErrConflict)
	running = move(t, s, c, running, fsm.Running) // a field-only update
	wantUsage(t, s, userAlice, run, "running, redelivered and updated")
	stopped := move(t, s, c, running, fsm.Stopped)
	wantUsage(t, s, userAlice, container.QuotaUse{Instances: 1}, "stopped")
	wantUsage(t, s, teamData, container.QuotaUse{Instances: 1}, "stopped (team)")
	limits := &store.QuotaLimits{User: container.QuotaUse{Running: 1}}
	starting, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: stopped.Version, From: fsm.Stopped, To: fsm.StartPending, Quota: limits})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	wantUsage(t, s, userAlice, run, "start pending")
	failed := move(t, s, c, starting, fsm.Failed)
	wantUsage(t, s, userAlice, container.QuotaUse{Instances: 1}, "failed")
	del := move(t, s, c, failed, fsm.DeletePending)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: del.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, userAlice, container.QuotaUse{}, "deleted")
	wantUsage(t, s, teamData, container.QuotaUse{}, "deleted (team)")

	// A delete of an instance that still runs releases its run too.
	other := move(t, s, c, move(t, s, c, mustCreate(t, s, teamCreate(c, "alice", "")), fsm.Creating), fsm.Running)
	if err := s.DeleteInstance(ctx, store.DeleteParams{ID: other.ID, ExpectVersion: other.Version,
		Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, userAlice, container.QuotaUse{}, "a running instance deleted")
}

// wantQuotaErr checks that err refuses quota of sub at limit with used.
func wantQuotaErr(t testing.TB, what string, err error, sub store.QuotaSubject, quota string, limit, used int64) {
	t.Helper()
	var qe *store.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("%s: %v, want a quota error", what, err)
	}
	if qe.Subject != sub || qe.Quota != quota || qe.Limit != limit || qe.Used != used {
		t.Errorf("%s: %+v, want %s %s limit %d used %d", what, *qe, sub, quota, limit, used)
	}
}

// testQuotaRefusal: each quota refuses exactly at its limit, naming it,
// and a refused write writes nothing; a team's members share its quota;
// a stopped instance does not count toward running.
func testQuotaRefusal(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	create := func(owner, team string, l store.QuotaLimits) (container.Instance, error) {
		p := teamCreate(c, owner, team)
		p.Quota = &l
		return s.CreateInstance(ctx, p)
	}
	cases := []struct {
		quota string
		limit container.QuotaUse
		fits  int   // creates that fit
		used  int64 // the use reported at the refusal
	}{
		{container.QuotaInstances, container.QuotaUse{Instances: 2}, 2, 2},
		{container.QuotaRunning, container.QuotaUse{Running: 3}, 3, 3},
		{container.QuotaPending, container.QuotaUse{Pending: 1}, 1, 1},
		{container.QuotaCPUs, container.QuotaUse{CPUMillis: 1200}, 2, 1000},
		{container.QuotaMemory, container.QuotaUse{MemoryBytes: 64 << 20}, 1, 64 << 20},
	}
	for _, tc := range cases {
		owner := "refuse-" + tc.quota
		sub := store.QuotaSubject{Kind: store.QuotaUser, Name: owner}
		for i := 0; i < tc.fits; i++ {
			if _, err := create(owner, "", store.QuotaLimits{User: tc.limit}); err != nil {
				t.Fatalf("%s: create %d of %d: %v", tc.quota, i+1, tc.fits, err)
			}
		}
		before := usage(t, s, sub)
		p := teamCreate(c, owner, "")
		p.Quota = &store.QuotaLimits{User: tc.limit}
		_, err := s.CreateInstance(ctx, p)
		wantQuotaErr(t, tc.quota, err, sub, tc.quota, tc.limit.Of(tc.quota), tc.used)
		if _, err := s.GetInstance(ctx, p.Instance.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the refused create left its instance: %v", tc.quota, err)
		}
		wantUsage(t, s, sub, before, tc.quota+": after the refusal")
	}

	// A team's members share its quota: alice and bob fill it, carol
	// (another member) is refused on the team's, dave (no team) is not.
	team := store.QuotaLimits{Team: container.QuotaUse{Instances: 2}}
	if _, err := create("alice", "data", team); err != nil {
		t.Fatal(err)
	}
	bobs, err := create("bob", "data", team)
	if err != nil {
		t.Fatal(err)
	}
	_, err = create("carol", "data", team)
	wantQuotaErr(t, "carol of team data", err, teamData, container.QuotaInstances, 2, 2)
	if _, err := create("dave", "", team); err != nil {
		t.Errorf("dave, of no team: %v", err)
	}

	// Running: a stopped instance does not count, and a start is refused
	// at the limit.
	running := store.QuotaLimits{User: container.QuotaUse{Running: 1}}
	bob := store.QuotaSubject{Kind: store.QuotaUser, Name: "bob"}
	stopped := move(t, s, c, move(t, s, c, bobs, fsm.Creating), fsm.Stopped)
	second, err := create("bob", "", running)
	if err != nil {
		t.Fatalf("bob's second create, his first stopped: %v", err)
	}
	_, err = s.Transition(ctx, store.TransitionParams{ID: stopped.ID, ExpectVersion: stopped.Version, From: fsm.Stopped, To: fsm.StartPending, Quota: &running})
	wantQuotaErr(t, "bob's start", err, bob, container.QuotaRunning, 1, 1)
	if got := mustGet(t, s, stopped.ID); got.Status != fsm.Stopped || got.Version != stopped.Version {
		t.Errorf("the refused start changed the instance: %s v%d", got.Status, got.Version)
	}
	move(t, s, c, move(t, s, c, second, fsm.Creating), fsm.Stopped)
	if _, err := s.Transition(ctx, store.TransitionParams{ID: stopped.ID, ExpectVersion: stopped.Version, From: fsm.Stopped, To: fsm.StartPending, Quota: &running}); err != nil {
		t.Errorf("bob's start once his other instance stopped: %v", err)
	}
}

// testQuotaConcurrentCreates: 32 creators of one owner race for a quota
// of 10 instances, then 32 more race while 5 are deleted: the use never
// passes the limit, exactly the limit's creates win each round, and the
// use is the count of the instances left.
func testQuotaConcurrentCreates(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	const creators, limit = 32, 10
	limits := &store.QuotaLimits{User: container.QuotaUse{Instances: limit}, Team: container.QuotaUse{Instances: limit}}
	race := func(before func()) []container.Instance {
		var mu sync.Mutex
		var won []container.Instance
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < creators; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := teamCreate(c, "alice", "data")
				p.Quota = limits
				<-start
				inst, err := s.CreateInstance(ctx, p)
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, inst)
					mu.Unlock()
				case !errors.Is(err, store.ErrQuotaExceeded):
					t.Errorf("create: %v", err)
				}
			}()
		}
		if before != nil {
			wg.Add(1)
			go func() { defer wg.Done(); <-start; before() }()
		}
		close(start)
		wg.Wait()
		return won
	}
	first := race(nil)
	if len(first) != limit {
		t.Fatalf("%d of %d racing creates won, want exactly %d", len(first), creators, limit)
	}
	wantUsage(t, s, userAlice, container.QuotaUse{Instances: limit, Running: limit, Pending: limit, CPUMillis: 500 * limit, MemoryBytes: limit * 64 << 20}, "after the first race")
	second := race(func() {
		for _, inst := range first[:5] {
			if err := s.DeleteInstance(ctx, store.DeleteParams{ID: inst.ID, ExpectVersion: inst.Version,
				Event: container.Event{Type: container.EventDeleted, At: c.Now()}}); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	})
	left := allInstances(t, s, store.ListQuery{Owner: "alice"})
	if len(left) > limit || len(second) > 5 {
		t.Fatalf("%d instances left (%d won the second race), quota %d", len(left), len(second), limit)
	}
	if u := usage(t, s, userAlice); u.Instances != int64(len(left)) || usage(t, s, teamData).Instances != int64(len(left)) {
		t.Errorf("use %d (team %d), but %d instances are left", u.Instances, usage(t, s, teamData).Instances, len(left))
	}
	t.Logf("first race: %d of %d won (quota %d); second, with 5 deleted: %d won, %d left", len(first), creators, limit, len(second), len(left))
}

// testQuotaOverrides: overrides are put, read, listed (teams then users,
// by name) and deleted; bad subjects and limits are refused.
func testQuotaOverrides(t *testing.T, s store.Store, _ *Clock) {
	ctx := context.Background()
	if _, err := s.GetQuotaOverride(ctx, userAlice); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get before put: %v", err)
	}
	if l, err := s.ListQuotaOverrides(ctx); err != nil || len(l) != 0 {
		t.Fatalf("list before put: %v %v", l, err)
	}
	for _, o := range []store.QuotaOverride{
		{Subject: userAlice, Limits: container.QuotaUse{Instances: 5}},
		{Subject: teamData, Limits: container.QuotaUse{CPUMillis: 4000, MemoryBytes: 8 << 30}},
		{Subject: store.QuotaSubject{Kind: store.QuotaUser, Name: "aaron"}, Limits: container.QuotaUse{Running: 1}},
		{Subject: userAlice, Limits: container.QuotaUse{Instances: 7}}, // replaces
	} {
		if _, err := s.PutQuotaOverride(ctx, o); err != nil {
			t.Fatalf("put %s: %v", o.Subject, err)
		}
	}
	got, err := s.GetQuotaOverride(ctx, userAlice)
	if err != nil || got.Limits != (container.QuotaUse{Instances: 7}) || got.UpdatedAt.IsZero() {
		t.Errorf("get alice: %+v %v", got, err)
	}
	list, err := s.ListQuotaOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, o := range list {
		order = append(order, o.Subject.String())
	}
	if want := []string{"team data", "user aaron", "user alice"}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Errorf("list order %v, want %v", order, want)
	}
	if err := s.DeleteQuotaOverride(ctx, teamData); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete again", s.DeleteQuotaOverride(ctx, teamData), store.ErrNotFound)
	for _, bad := range []store.QuotaOverride{
		{Subject: store.QuotaSubject{Kind: "group", Name: "x"}},
		{Subject: store.QuotaSubject{Kind: store.QuotaUser}},
		{Subject: userAlice, Limits: container.QuotaUse{Running: -1}},
	} {
		_, err := s.PutQuotaOverride(ctx, bad)
		wantErr(t, "put "+bad.Subject.String(), err, store.ErrInvalidParams)
	}
}
