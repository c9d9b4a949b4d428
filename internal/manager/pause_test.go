package manager_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// pauseFixture is a manager on a bolt store with a Docker template "t", a
// Kubernetes template "k" and a restarting template "r".
func pauseFixture(t *testing.T) (*manager.Manager, store.Store) {
	t.Helper()
	s := teststores.Bolt(t, time.Now)
	m := manager.New(manager.Options{Store: s, Runtimes: []string{"docker", "kubernetes"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	root := identity.Caller{User: "root", Admin: true}
	for _, tpl := range []container.Template{
		{Name: "t", Runtime: "docker", Image: "x"},
		{Name: "k", Runtime: "kubernetes", Image: "x"},
		{Name: "r", Runtime: "docker", Image: "x", Restart: &container.Restart{Policy: container.RestartAlways, Backoff: "1m", MaxBackoff: "1m"}},
	} {
		if _, _, err := m.PutTemplate(context.Background(), root, tpl); err != nil {
			t.Fatal(err)
		}
	}
	return m, s
}

// driven is a new instance of tpl owned by alice, driven along paths to from.
func driven(t *testing.T, m *manager.Manager, s store.Store, tpl string, from fsm.Status) container.Instance {
	t.Helper()
	ctx := context.Background()
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: tpl}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst := res.Instance
	for _, to := range paths[from] {
		p := store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}
		if to == fsm.Running {
			at := time.Now().UTC()
			p.Update = func(i *container.Instance) { i.StartedAt = &at }
		}
		if inst, err = s.Transition(ctx, p); err != nil {
			t.Fatalf("driving to %s: %v", to, err)
		}
	}
	return inst
}

// TestPauseRequests: what POST /pause and /resume answer from each status
// (the FSM's running ⇄ paused; already there is no work; the rest 409),
// the request's write (status unchanged, an outbox item of its op and an
// event by the caller), another owner (not found), a runtime that cannot
// pause (named), and a running instance awaiting its restart (409).
func TestPauseRequests(t *testing.T) {
	m, s := pauseFixture(t)
	ctx := context.Background()
	alice := identity.Caller{User: "alice"}
	type verb func(context.Context, identity.Caller, string, *int64, string) (manager.Result, error)
	cases := []struct {
		name string
		from fsm.Status
		op   container.Op
		want string // enqueued, noop, conflict
	}{
		{"pause running", fsm.Running, container.OpPause, "enqueued"},
		{"resume paused", fsm.Paused, container.OpResume, "enqueued"},
		{"pause paused", fsm.Paused, container.OpPause, "noop"},
		{"resume running", fsm.Running, container.OpResume, "noop"},
	}
	for _, st := range fsm.All {
		if st != fsm.Running && st != fsm.Paused {
			cases = append(cases, struct {
				name string
				from fsm.Status
				op   container.Op
				want string
			}{"pause " + string(st), st, container.OpPause, "conflict"}, struct {
				name string
				from fsm.Status
				op   container.Op
				want string
			}{"resume " + string(st), st, container.OpResume, "conflict"})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inst := driven(t, m, s, "t", tc.from)
			call := verb(m.Pause)
			event := container.EventPauseRequested
			if tc.op == container.OpResume {
				call, event = m.Resume, container.EventResumeRequested
			}
			res, err := call(ctx, alice, inst.ID, nil, "req-1")
			after, gerr := s.GetInstance(ctx, inst.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if after.Status != tc.from {
				t.Fatalf("status %s after the request, want %s unchanged", after.Status, tc.from)
			}
			switch tc.want {
			case "conflict":
				var se *manager.StateError
				if !errors.As(err, &se) || se.Current != tc.from || !errors.Is(err, fsm.ErrInvalidTransition) {
					t.Fatalf("err %v, want a StateError from %s", err, tc.from)
				}
				if after.Version != inst.Version {
					t.Fatalf("a refused request wrote: version %d → %d", inst.Version, after.Version)
				}
			case "noop":
				if err != nil || res.Enqueued || after.Version != inst.Version {
					t.Fatalf("res %+v, %v, version %d → %d; want nothing to do", res, err, inst.Version, after.Version)
				}
			case "enqueued":
				if err != nil || !res.Enqueued {
					t.Fatalf("res %+v, %v; want enqueued", res, err)
				}
				evs, _ := s.ListEvents(ctx, inst.ID, "", 100)
				last := evs.Items[len(evs.Items)-1]
				if last.Type != event || last.Actor != "alice" || last.From != tc.from || last.To != tc.from {
					t.Fatalf("last event %+v, want %s by alice, status unchanged", last, event)
				}
				items, err := s.ListUndispatched(ctx, time.Now().Add(time.Minute), 1000)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, it := range items {
					found = found || it.InstanceID == inst.ID && it.Op == tc.op && it.RequestID == "req-1"
				}
				if !found {
					t.Fatalf("no pending %s outbox item for the instance", tc.op)
				}
			}
		})
	}

	t.Run("another owner", func(t *testing.T) {
		inst := driven(t, m, s, "t", fsm.Running)
		if _, err := m.Pause(ctx, identity.Caller{User: "bob"}, inst.ID, nil, ""); !errors.Is(err, manager.ErrNotFound) {
			t.Fatalf("bob pausing alice's: %v, want not found", err)
		}
		if _, err := m.Pause(ctx, identity.Caller{User: "root", Admin: true}, inst.ID, nil, ""); err != nil {
			t.Fatalf("an admin pausing alice's: %v", err)
		}
	})
	t.Run("kubernetes", func(t *testing.T) {
		inst := driven(t, m, s, "k", fsm.Running)
		_, err := m.Pause(ctx, alice, inst.ID, nil, "")
		var ue *manager.UnsupportedError
		if !errors.As(err, &ue) || ue.Runtime != "kubernetes" || ue.Op != "pause" {
			t.Fatalf("pause on kubernetes: %v, want UnsupportedError naming kubernetes", err)
		}
	})
	t.Run("restart scheduled", func(t *testing.T) {
		inst := driven(t, m, s, "r", fsm.Running)
		code := 1
		if _, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedExited, ExitCode: &code}); err != nil {
			t.Fatal(err)
		}
		_, err := m.Pause(ctx, alice, inst.ID, nil, "")
		var se *manager.StateError
		if !errors.As(err, &se) || se.Why == "" {
			t.Fatalf("pause of a container awaiting its restart: %v, want a StateError saying why", err)
		}
	})
	t.Run("if-match", func(t *testing.T) {
		inst := driven(t, m, s, "t", fsm.Running)
		stale := inst.Version - 1
		if _, err := m.Pause(ctx, alice, inst.ID, &stale, ""); !errors.Is(err, manager.ErrVersion) {
			t.Fatalf("pause at a stale version: %v, want ErrVersion", err)
		}
	})
}

// TestFrozen: the worker's intent completes a pause or a resume (running ⇄
// paused, by berth), does nothing when the state loop got there first, and
// is ErrMoved once a stop or delete moved the instance on.
func TestFrozen(t *testing.T) {
	m, s := pauseFixture(t)
	ctx := context.Background()
	cases := []struct {
		from  fsm.Status
		pause bool
		to    fsm.Status
		moved bool
	}{
		{fsm.Running, true, fsm.Paused, false},
		{fsm.Paused, false, fsm.Running, false},
		{fsm.Paused, true, fsm.Paused, false},
		{fsm.Running, false, fsm.Running, false},
		{fsm.StopPending, true, fsm.StopPending, true},
		{fsm.Stopping, false, fsm.Stopping, true},
		{fsm.DeletePending, true, fsm.DeletePending, true},
		{fsm.Stopped, false, fsm.Stopped, true},
	}
	for _, tc := range cases {
		inst := driven(t, m, s, "t", tc.from)
		err := m.Frozen(ctx, inst.ID, "", tc.pause, time.Time{})
		if tc.moved != errors.Is(err, manager.ErrMoved) || (!tc.moved && err != nil) {
			t.Errorf("%s pause=%v: %v, want moved=%v", tc.from, tc.pause, err, tc.moved)
		}
		after, _ := s.GetInstance(ctx, inst.ID)
		if after.Status != tc.to {
			t.Errorf("%s pause=%v: status %s, want %s", tc.from, tc.pause, after.Status, tc.to)
		}
		if tc.from != tc.to {
			evs, _ := s.ListEvents(ctx, inst.ID, "", 100)
			last := evs.Items[len(evs.Items)-1]
			want := map[bool]string{true: container.EventPaused, false: container.EventResumed}[tc.pause]
			if last.Type != want || last.Actor != container.ActorSystem {
				t.Errorf("%s pause=%v: last event %s by %s, want %s by berth", tc.from, tc.pause, last.Type, last.Actor, want)
			}
		}
	}
}

// TestOnEventPaused: the state loop's part. A runtime's pause or resume
// moves running ⇄ paused and nothing else (berth's own stop, start or
// delete in progress reports on its own); a start of the paused run
// reported again (a replayed event, a late listing) does not take a paused
// instance back to running, a new run does; an exit while paused ends it
// without its restart policy (a frozen process does not exit by itself:
// someone killed it), and a pause reported while a restart is due is not
// news.
func TestOnEventPaused(t *testing.T) {
	m, s := pauseFixture(t)
	ctx := context.Background()
	three := 3
	paused := manager.Observation{Kind: manager.ObservedPaused}
	resumed := manager.Observation{Kind: manager.ObservedResumed}
	cases := []struct {
		tpl     string
		from    fsm.Status
		ob      manager.Observation
		applied manager.Applied
		to      fsm.Status
		event   string
	}{
		{"t", fsm.Running, paused, manager.AppliedTransition, fsm.Paused, container.EventPaused},
		{"t", fsm.Paused, resumed, manager.AppliedTransition, fsm.Running, container.EventResumed},
		{"t", fsm.Paused, paused, manager.AppliedNoop, fsm.Paused, ""},
		{"t", fsm.Running, resumed, manager.AppliedNoop, fsm.Running, ""},
		{"t", fsm.StopPending, paused, manager.AppliedExpected, fsm.StopPending, ""},
		{"t", fsm.Stopping, resumed, manager.AppliedExpected, fsm.Stopping, ""},
		{"t", fsm.StartPending, resumed, manager.AppliedExpected, fsm.StartPending, ""},
		{"t", fsm.Starting, resumed, manager.AppliedExpected, fsm.Starting, ""},
		{"t", fsm.Creating, paused, manager.AppliedExpected, fsm.Creating, ""},
		{"t", fsm.DeletePending, paused, manager.AppliedExpected, fsm.DeletePending, ""},
		{"t", fsm.Stopped, resumed, manager.AppliedExpected, fsm.Stopped, ""},
		{"t", fsm.Failed, paused, manager.AppliedExpected, fsm.Failed, ""},
		{"r", fsm.Paused, manager.Observation{Kind: manager.ObservedExited, ExitCode: &three}, manager.AppliedTransition, fsm.Failed, container.EventFailed},
	}
	for _, tc := range cases {
		name := tc.tpl + "/" + string(tc.from) + "/" + string(tc.ob.Kind)
		inst := driven(t, m, s, tc.tpl, tc.from)
		ob := tc.ob
		ob.InstanceID = inst.ID
		applied, err := m.OnEvent(ctx, ob)
		if err != nil || applied != tc.applied {
			t.Errorf("%s: applied %q, %v; want %q", name, applied, err, tc.applied)
			continue
		}
		after, _ := s.GetInstance(ctx, inst.ID)
		if after.Status != tc.to || after.RestartAt != nil {
			t.Errorf("%s: status %s restart_at %v, want %s and no restart", name, after.Status, after.RestartAt, tc.to)
		}
		evs, _ := s.ListEvents(ctx, inst.ID, "", 100)
		last := evs.Items[len(evs.Items)-1]
		switch {
		case tc.event == "" && last.Seq != inst.EventSeq:
			t.Errorf("%s: recorded %s, want nothing", name, last.Type)
		case tc.event != "" && (last.Type != tc.event || last.Actor != container.ActorSystem):
			t.Errorf("%s: last event %s by %q, want %s by berth", name, last.Type, last.Actor, tc.event)
		}
	}

	t.Run("start of the paused run", func(t *testing.T) {
		inst := driven(t, m, s, "t", fsm.Paused)
		same := manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedStarted, At: *inst.StartedAt}
		if applied, err := m.OnEvent(ctx, same); err != nil || applied != manager.AppliedStale {
			t.Fatalf("the paused run's start again: %q, %v; want stale", applied, err)
		}
		if after, _ := s.GetInstance(ctx, inst.ID); after.Status != fsm.Paused {
			t.Fatalf("status %s, want paused", after.Status)
		}
		later := manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedStarted, At: inst.StartedAt.Add(time.Second)}
		if applied, err := m.OnEvent(ctx, later); err != nil || applied != manager.AppliedTransition {
			t.Fatalf("a new run: %q, %v; want a transition", applied, err)
		}
		if after, _ := s.GetInstance(ctx, inst.ID); after.Status != fsm.Running {
			t.Fatalf("status %s after a new run, want running", after.Status)
		}
	})
	t.Run("pause while a restart is due", func(t *testing.T) {
		inst := driven(t, m, s, "r", fsm.Running)
		if _, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedExited, ExitCode: &three}); err != nil {
			t.Fatal(err)
		}
		applied, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedPaused})
		if err != nil || applied != manager.AppliedStale {
			t.Fatalf("pause reported while a restart is due: %q, %v; want stale", applied, err)
		}
	})
}
