package manager_test

import (
	"context"
	"fmt"
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

// paths lead from pending to each status the table below starts from.
var paths = map[fsm.Status][]fsm.Status{
	fsm.Pending:       {},
	fsm.Creating:      {fsm.Creating},
	fsm.Running:       {fsm.Creating, fsm.Running},
	fsm.Paused:        {fsm.Creating, fsm.Running, fsm.Paused},
	fsm.StopPending:   {fsm.Creating, fsm.Running, fsm.StopPending},
	fsm.Stopping:      {fsm.Creating, fsm.Running, fsm.StopPending, fsm.Stopping},
	fsm.Stopped:       {fsm.Creating, fsm.Running, fsm.Stopped},
	fsm.StartPending:  {fsm.Creating, fsm.Running, fsm.Stopped, fsm.StartPending},
	fsm.Starting:      {fsm.Creating, fsm.Running, fsm.Stopped, fsm.StartPending, fsm.Starting},
	fsm.DeletePending: {fsm.DeletePending},
	fsm.Deleting:      {fsm.DeletePending, fsm.Deleting},
	fsm.Failed:        {fsm.Failed},
}

func TestOnEvent(t *testing.T) {
	zero, three := 0, 3
	started := manager.Observation{Kind: manager.ObservedStarted, NodeName: "h1"}
	exit0 := manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero}
	exit3 := manager.Observation{Kind: manager.ObservedExited, ExitCode: &three}
	oom := manager.Observation{Kind: manager.ObservedExited, ExitCode: &three, OOMKilled: true}
	gone := manager.Observation{Kind: manager.ObservedDestroyed}
	cases := []struct {
		from    fsm.Status
		ob      manager.Observation
		applied manager.Applied
		to      fsm.Status
		event   string
	}{
		{fsm.Creating, started, manager.AppliedTransition, fsm.Running, container.EventStarted},
		{fsm.Starting, started, manager.AppliedTransition, fsm.Running, container.EventStarted},
		{fsm.Stopped, started, manager.AppliedTransition, fsm.Running, container.EventStarted},
		{fsm.Running, started, manager.AppliedNoop, fsm.Running, ""},
		{fsm.Pending, started, manager.AppliedRejected, fsm.Pending, container.EventTransitionReject},
		{fsm.StopPending, started, manager.AppliedRejected, fsm.StopPending, container.EventTransitionReject},
		{fsm.Failed, started, manager.AppliedRejected, fsm.Failed, container.EventTransitionReject},
		{fsm.DeletePending, started, manager.AppliedExpected, fsm.DeletePending, ""},
		{fsm.Deleting, started, manager.AppliedExpected, fsm.Deleting, ""},
		{fsm.Running, exit0, manager.AppliedTransition, fsm.Stopped, container.EventExited},
		{fsm.Running, exit3, manager.AppliedTransition, fsm.Failed, container.EventFailed},
		{fsm.Running, oom, manager.AppliedTransition, fsm.Failed, container.EventFailed},
		{fsm.Creating, exit0, manager.AppliedTransition, fsm.Stopped, container.EventExited},
		{fsm.Paused, exit3, manager.AppliedTransition, fsm.Failed, container.EventFailed},
		{fsm.Stopping, exit3, manager.AppliedTransition, fsm.Stopped, container.EventStopped},
		{fsm.StopPending, exit3, manager.AppliedExpected, fsm.StopPending, ""},
		{fsm.Deleting, exit3, manager.AppliedExpected, fsm.Deleting, ""},
		{fsm.DeletePending, gone, manager.AppliedExpected, fsm.DeletePending, ""},
		{fsm.Stopped, exit0, manager.AppliedNoop, fsm.Stopped, ""},
		{fsm.Failed, exit3, manager.AppliedNoop, fsm.Failed, ""},
		{fsm.Running, gone, manager.AppliedTransition, fsm.Failed, container.EventFailed},
		{fsm.Creating, gone, manager.AppliedExpected, fsm.Creating, ""},
		{fsm.Pending, gone, manager.AppliedExpected, fsm.Pending, ""},
		{fsm.Starting, exit0, manager.AppliedExpected, fsm.Starting, ""},
		{fsm.Starting, gone, manager.AppliedExpected, fsm.Starting, ""},
		{fsm.StartPending, gone, manager.AppliedExpected, fsm.StartPending, ""},
		{fsm.Pending, exit3, manager.AppliedTransition, fsm.Failed, container.EventFailed},
	}
	ctx := context.Background()
	s := teststores.Bolt(t, time.Now)
	m := manager.New(manager.Options{Store: s, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "t", Runtime: "docker", Image: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		name := string(tc.from) + "/" + string(tc.ob.Kind)
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		inst := res.Instance
		for _, to := range paths[tc.from] {
			if inst, err = s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
				t.Fatalf("%s: driving to %s: %v", name, to, err)
			}
		}
		ob := tc.ob
		ob.InstanceID = inst.ID
		applied, err := m.OnEvent(ctx, ob)
		if err != nil || applied != tc.applied {
			t.Errorf("%s: applied %q, %v; want %q", name, applied, err, tc.applied)
			continue
		}
		after, _ := s.GetInstance(ctx, inst.ID)
		if after.Status != tc.to {
			t.Errorf("%s: status %s, want %s", name, after.Status, tc.to)
		}
		evs, _ := s.ListEvents(ctx, inst.ID, "", 100)
		last := evs.Items[len(evs.Items)-1]
		if tc.event == "" {
			if last.Seq != inst.EventSeq {
				t.Errorf("%s: recorded %s, want nothing", name, last.Type)
			}
			continue
		}
		if last.Type != tc.event || last.Actor != container.ActorSystem {
			t.Errorf("%s: last event %s by %q, want %s by berth", name, last.Type, last.Actor, tc.event)
		}
		if tc.applied == manager.AppliedTransition && tc.ob.ExitCode != nil && (after.ExitCode == nil || *after.ExitCode != *tc.ob.ExitCode || after.FinishedAt == nil) {
			t.Errorf("%s: exit code/finished_at not recorded: %+v", name, after)
		}
		if tc.ob.Kind == manager.ObservedStarted && tc.applied == manager.AppliedTransition && (after.RuntimeNodeName != "h1" || after.StartedAt == nil) {
			t.Errorf("%s: node/started_at not recorded: %+v", name, after)
		}
	}
	// An observation for a deleted instance is acknowledged as gone.
	if applied, err := m.OnEvent(ctx, manager.Observation{InstanceID: "gone", Kind: manager.ObservedStarted}); err != nil || applied != manager.AppliedGone {
		t.Fatalf("unknown instance: %q, %v", applied, err)
	}
}

// TestOnEventStaleObservation: an event stream that delivers late (the
// chaos test saw a container's "start" arrive after its exit had failed
// the instance) must not be recorded as a conflict with the runtime; the
// same observation made after the status was reached still is one.
func TestOnEventStaleObservation(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		s := b.Open(t, func() time.Time { return t0 })
		m := manager.New(manager.Options{Store: s, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "t", Runtime: "docker", Image: "x"}); err != nil {
			t.Fatal(err)
		}
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		inst := res.Instance
		for _, to := range paths[fsm.Failed] {
			if inst, err = s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			at   time.Time
			want manager.Applied
		}{
			{t0.Add(-time.Second), manager.AppliedStale},
			{t0.Add(time.Second), manager.AppliedRejected},
		} {
			applied, err := m.OnEvent(ctx, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedStarted, At: tc.at})
			if err != nil || applied != tc.want {
				t.Fatalf("started at %s on an instance failed at %s: %q, %v; want %q", tc.at, t0, applied, err, tc.want)
			}
		}
		evs, err := s.ListEvents(ctx, inst.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var rejected int
		for _, ev := range evs.Items {
			if ev.Type == container.EventTransitionReject {
				rejected++
			}
		}
		if rejected != 1 {
			t.Fatalf("%d TransitionRejected events, want 1 (the late observation records none): %+v", rejected, evs.Items)
		}
	})
}

// observed is one instance, claimed (creating), of a manager whose clock
// stands at t0, for feeding observations to OnEvent.
type observed struct {
	t  *testing.T
	s  store.Store
	m  *manager.Manager
	id string
	t0 time.Time
}

func newObserved(t *testing.T, b teststores.Backend, t0 time.Time) *observed {
	t.Helper()
	ctx := context.Background()
	s := b.Open(t, func() time.Time { return t0 })
	m := manager.New(manager.Options{Store: s, Clock: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "t", Runtime: "docker", Image: "x"}); err != nil {
		t.Fatal(err)
	}
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	o := &observed{t: t, s: s, m: m, id: res.Instance.ID, t0: t0}
	o.walk(fsm.Creating)
	return o
}

// walk moves the instance through statuses with plain store writes (what
// a user's request and a worker's claim would write).
func (o *observed) walk(statuses ...fsm.Status) {
	o.t.Helper()
	ctx := context.Background()
	inst, err := o.s.GetInstance(ctx, o.id)
	if err != nil {
		o.t.Fatal(err)
	}
	for _, to := range statuses {
		if inst, err = o.s.Transition(ctx, store.TransitionParams{ID: o.id, ExpectVersion: inst.Version, From: inst.Status, To: to}); err != nil {
			o.t.Fatal(err)
		}
	}
}

// apply feeds ob (for this instance) to OnEvent and checks what it did
// and the status it left.
func (o *observed) apply(step string, ob manager.Observation, want manager.Applied, then fsm.Status) {
	o.t.Helper()
	ctx := context.Background()
	ob.InstanceID = o.id
	applied, err := o.m.OnEvent(ctx, ob)
	if err != nil || applied != want {
		o.t.Fatalf("%s (%s at +%s): %q, %v; want %q", step, ob.Kind, ob.At.Sub(o.t0), applied, err, want)
	}
	inst, err := o.s.GetInstance(ctx, o.id)
	if err != nil || inst.Status != then {
		o.t.Fatalf("%s: status %s, %v; want %s", step, inst.Status, err, then)
	}
}

// A late "started" report from before the container's own exit must not
// take a stopped instance back to running (stopped → running is a legal
// transition, so only the times tell it is stale); a start after the exit
// (docker start behind berth's back) still does.
func TestOnEventSupersededStart(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		o := newObserved(t, b, t0)
		zero := 0
		steps := []struct {
			ob   manager.Observation
			want manager.Applied
			then fsm.Status
		}{
			{manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(time.Second)}, manager.AppliedTransition, fsm.Running},
			{manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero, At: t0.Add(3 * time.Second)}, manager.AppliedTransition, fsm.Stopped},
			// Delivered late: it happened before the exit just applied.
			{manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(2 * time.Second)}, manager.AppliedStale, fsm.Stopped},
			{manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(4 * time.Second)}, manager.AppliedTransition, fsm.Running},
			// An exit from before that start is stale as well.
			{manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero, At: t0.Add(3500 * time.Millisecond)}, manager.AppliedStale, fsm.Running},
			{manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero, At: t0.Add(5500 * time.Millisecond)}, manager.AppliedTransition, fsm.Stopped},
		}
		for i, st := range steps {
			o.apply(fmt.Sprintf("step %d", i), st.ob, st.want, st.then)
		}

		// Started again (stopped → start_pending → starting): a late report
		// of the run that ended at +5.5 s is not the new start, while the new
		// start in a whole-second clock (Kubernetes: at +5.7 s it reads +5 s)
		// is.
		o.walk(fsm.StartPending, fsm.Starting)
		o.apply("late report of the run before", manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(4200 * time.Millisecond)}, manager.AppliedStale, fsm.Starting)
		o.apply("the new start, in whole seconds", manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(5 * time.Second)}, manager.AppliedTransition, fsm.Running)
	})
}

// A start asked of a running instance (running → start_pending → starting)
// whose container has in fact ended, its exit not seen yet: a late report
// of the run already recorded is not the start the instance waits for, or
// it would be running (and stoppable) while the worker's start is still to
// happen (TestServeChaos once saw that stop's container started after it).
// The worker's own report after its start call is the present, whatever
// run it shows; a later start from any observer is the new one.
func TestOnEventStartAskedWhileRunning(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
		o := newObserved(t, b, t0)
		run1 := t0.Add(time.Second)
		o.apply("the create's run", manager.Observation{Kind: manager.ObservedStarted, At: run1}, manager.AppliedTransition, fsm.Running)

		o.walk(fsm.StartPending, fsm.Starting)
		o.apply("the same run, reported late", manager.Observation{Kind: manager.ObservedStarted, At: run1}, manager.AppliedStale, fsm.Starting)
		o.apply("the same run's event, a little earlier", manager.Observation{Kind: manager.ObservedStarted, At: run1.Add(-2 * time.Millisecond)}, manager.AppliedStale, fsm.Starting)
		o.apply("the worker: still that run (a start of a running container)", manager.Observation{Kind: manager.ObservedStarted, At: run1, ReportOf: container.OpStart}, manager.AppliedTransition, fsm.Running)

		o.walk(fsm.StartPending, fsm.Starting)
		o.apply("a new run, from the event stream", manager.Observation{Kind: manager.ObservedStarted, At: run1.Add(2 * time.Second)}, manager.AppliedTransition, fsm.Running)
	})
}

// The interleaving of issue #38 (TestServeChaos, seed 1796402028245023635),
// forced step by step: a container of a template that exits at once is
// recorded running from the event stream; the user asks a start, which the
// start worker claims; then the create's worker reports, late, the run it
// saw, a few milliseconds before the recorded start. That report is of the
// run before the start was asked: taken for the start, the instance was
// running and stoppable, and the start worker's real start then ran the
// container under the user's stop ("runtime reported started while
// stopping"). Only the start's own worker may complete the start with the
// recorded run, and only once it has claimed the start.
func TestOnEventCreateReportDuringStart(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t0 := time.Date(2026, 12, 4, 16, 33, 58, 0, time.UTC)
		o := newObserved(t, b, t0)
		exited := chaosBadExit
		event := t0.Add(533 * time.Millisecond) // the engine's start event
		run1 := t0.Add(528 * time.Millisecond)  // the container's own StartedAt
		o.apply("#3 the event stream", manager.Observation{Kind: manager.ObservedStarted, At: event}, manager.AppliedTransition, fsm.Running)

		o.walk(fsm.StartPending)
		o.apply("an earlier start's worker, before this start is claimed", manager.Observation{Kind: manager.ObservedStarted, At: run1, ReportOf: container.OpStart}, manager.AppliedStale, fsm.StartPending)
		o.walk(fsm.Starting)
		steps := []struct {
			step string
			ob   manager.Observation
			want manager.Applied
			then fsm.Status
		}{
			{"#6 the create's worker, late", manager.Observation{Kind: manager.ObservedStarted, At: run1, ReportOf: container.OpCreate}, manager.AppliedStale, fsm.Starting},
			{"its exit, late too", manager.Observation{Kind: manager.ObservedExited, ExitCode: &exited, At: run1.Add(7 * time.Millisecond), ReportOf: container.OpCreate}, manager.AppliedExpected, fsm.Starting},
			{"the same run from a listing", manager.Observation{Kind: manager.ObservedStarted, At: run1}, manager.AppliedStale, fsm.Starting},
			{"the start worker's real start", manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(1617 * time.Millisecond), ReportOf: container.OpStart}, manager.AppliedTransition, fsm.Running},
			{"the event stream's report of it", manager.Observation{Kind: manager.ObservedStarted, At: t0.Add(1617 * time.Millisecond)}, manager.AppliedNoop, fsm.Running},
			{"its own exit", manager.Observation{Kind: manager.ObservedExited, ExitCode: &exited, At: t0.Add(1630 * time.Millisecond)}, manager.AppliedTransition, fsm.Failed},
		}
		for _, st := range steps {
			o.apply(st.step, st.ob, st.want, st.then)
		}
	})
}

// chaosBadExit is the exit code of the chaos runs' "bad" template.
const chaosBadExit = 3

// A container that ends at once: Docker stamps its FinishedAt (the
// process's end) before its StartedAt (the end of dockerd's start
// bookkeeping), so the exit of the recorded run reads a few milliseconds
// before its start (TestServeChaos: a "bad" instance stayed running for two
// minutes while the reconciler took the present exit for a late one every
// second). The exit names the run it ended: that run is the recorded one,
// so the exit applies; an exit of a run begun before it is still late.
func TestOnEventQuickExit(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t0 := time.Date(2026, 12, 4, 23, 4, 17, 0, time.UTC)
		o := newObserved(t, b, t0)
		exited := chaosBadExit
		run := t0.Add(829 * time.Millisecond)      // State.StartedAt
		finished := t0.Add(826 * time.Millisecond) // State.FinishedAt: earlier
		earlier := t0.Add(-5 * time.Second)
		o.apply("the start", manager.Observation{Kind: manager.ObservedStarted, At: run}, manager.AppliedTransition, fsm.Running)
		o.apply("an exit of a run begun before it", manager.Observation{Kind: manager.ObservedExited, ExitCode: &exited, At: finished, RunStartedAt: &earlier},
			manager.AppliedStale, fsm.Running)
		o.apply("its own exit, stamped before its start", manager.Observation{Kind: manager.ObservedExited, ExitCode: &exited, At: finished, RunStartedAt: &run},
			manager.AppliedTransition, fsm.Failed)
		// A late report of that run's start reads after the exit, but it
		// is the run the exit ended (TestServeGroups once saw it run twice).
		o.apply("that run's start, reported late", manager.Observation{Kind: manager.ObservedStarted, At: run}, manager.AppliedStale, fsm.Failed)
		// Started again: the exit already recorded, delivered late while the
		// start waits for its worker, does not fail it again
		// (functions/worker's TestInProcessPath once saw that).
		zero := 0
		o2 := newObserved(t, b, t0)
		o2.apply("a quick run", manager.Observation{Kind: manager.ObservedStarted, At: run}, manager.AppliedTransition, fsm.Running)
		o2.apply("its exit", manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero, At: finished, RunStartedAt: &run}, manager.AppliedTransition, fsm.Stopped)
		o2.walk(fsm.StartPending)
		o2.apply("the recorded exit, late, while the start waits", manager.Observation{Kind: manager.ObservedExited, ExitCode: &zero, At: finished, RunStartedAt: &run},
			manager.AppliedStale, fsm.StartPending)
	})
}
