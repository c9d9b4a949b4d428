package storetest

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func mustUsage(t testing.TB, s store.Store, q store.UsageQuery) []store.UsageItem {
	t.Helper()
	items, err := s.Usage(context.Background(), q)
	if err != nil {
		t.Fatalf("Usage(%+v): %v", q, err)
	}
	return items
}

// testUsageLifecycle: a run of 0.5 CPU and 64Mi counts its seconds, its
// CPU and memory seconds, for its owner and its team; a redelivered start
// and a field-only update add nothing; a run still open counts up to now;
// a window after the run counts nothing; a bad query is refused.
func testUsageLifecycle(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	from := c.Now().Truncate(time.Hour)
	inst := mustCreate(t, s, teamCreate(c, "alice", "data"))
	creating := move(t, s, c, inst, fsm.Creating)
	running := move(t, s, c, creating, fsm.Running)
	_, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: creating.Version, From: fsm.Creating, To: fsm.Running})
	wantErr(t, "redelivered start", err, store.ErrConflict)
	c.Advance(100 * time.Second)
	running = move(t, s, c, running, fsm.Running)
	q := store.UsageQuery{Subject: userAlice, From: from, To: from.Add(48 * time.Hour), GroupBy: store.UsageByOwner}
	want := store.UsageItem{Key: "alice", RunningSeconds: 100, CPUMilliSeconds: 100 * 500, Creates: 1}
	want.Memory.Add(100 * 64 << 20)
	if got := mustUsage(t, s, q); !slices.Equal(got, []store.UsageItem{want}) {
		t.Errorf("open run: usage = %+v, want %+v", got, want)
	}
	c.Advance(20 * time.Second)
	move(t, s, c, running, fsm.StopPending)
	c.Advance(time.Hour)
	want = store.UsageItem{Key: "data", RunningSeconds: 120, CPUMilliSeconds: 120 * 500, Creates: 1}
	want.Memory.Add(120 * 64 << 20)
	q.Subject, q.GroupBy = teamData, store.UsageByTeam
	if got := mustUsage(t, s, q); !slices.Equal(got, []store.UsageItem{want}) {
		t.Errorf("ended run (team): usage = %+v, want %+v", got, want)
	}
	q.From = from.Add(24 * time.Hour)
	if got := mustUsage(t, s, q); len(got) != 0 {
		t.Errorf("a window after the run: usage = %+v, want none", got)
	}
	for _, bad := range []store.UsageQuery{
		{Subject: userAlice, From: from, To: from, GroupBy: store.UsageByDay},
		{Subject: userAlice, From: from.Add(time.Minute), To: from.Add(time.Hour), GroupBy: store.UsageByDay},
		{Subject: userAlice, From: from, To: from.Add(time.Hour), GroupBy: "week"},
		{Subject: userAlice, From: from.Add(-400 * 24 * time.Hour), To: from, GroupBy: store.UsageByDay},
	} {
		if _, err := s.Usage(ctx, bad); !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("Usage(%+v): err = %v, want ErrInvalidParams", bad, err)
		}
	}
}

// usageSeed is the seeded history's instance kinds: owner, team, template
// and resources.
var usageSeed = []struct {
	owner, team, template string
	res                   container.Resources
}{
	{"alice", "data", "busybox", container.Resources{CPU: "0.5", Memory: "64Mi"}},
	{"alice", "data", "python", container.Resources{CPU: "2", Memory: "3Gi"}},
	{"bob", "data", "busybox", container.Resources{CPU: "250m", Memory: "100M"}},
	{"carol", "", "busybox", container.Resources{CPU: "1", Memory: "1Gi"}},
}

// testUsageSeeded: random transitions (seeded) of several owners'
// instances, with the clock moving by random quarter seconds over about
// three days; then every query (windows of whole hours, some ending past
// now, each group_by, the owner's and the team's) matches, to the second,
// the intervals recomputed from the instances' events.
func testUsageSeeded(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 41))
	start := c.Now().Truncate(time.Hour)
	var live []container.Instance
	made := map[string]container.Instance{} // what each create made: its owner, team, template, resources
	var ids []string
	for step := 0; step < 160; step++ {
		c.Advance(time.Duration(rng.IntN(3*3600)) * time.Second / 4)
		if len(live) == 0 || rng.IntN(6) == 0 {
			k := usageSeed[rng.IntN(len(usageSeed))]
			p := teamCreate(c, k.owner, k.team)
			p.Instance.Template, p.Instance.Spec.Resources = k.template, k.res
			live = append(live, mustCreate(t, s, p))
			ids = append(ids, p.Instance.ID)
			made[p.Instance.ID] = p.Instance
			continue
		}
		i := rng.IntN(len(live))
		in := live[i]
		if in.Status == fsm.Deleting {
			if err := s.DeleteInstance(ctx, store.DeleteParams{ID: in.ID, ExpectVersion: in.Version,
				Event: container.Event{Type: container.EventDeleted, From: in.Status, At: c.Now()}}); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, i, i+1)
			continue
		}
		next := fsm.Next(in.Status)
		live[i] = move(t, s, c, in, next[rng.IntN(len(next))])
	}
	c.Advance(17 * time.Second)
	now := c.Now()
	h := recomputeUsage(t, s, ids, made)
	end := now.Truncate(time.Hour).Add(2 * time.Hour)
	hours := int(end.Sub(start) / time.Hour)
	windows := [][2]time.Time{{start, end}, {start.Add(-24 * time.Hour), now.Truncate(time.Hour)}}
	for range 6 {
		a, b := rng.IntN(hours), rng.IntN(hours)
		if a == b {
			b++
		}
		windows = append(windows, [2]time.Time{start.Add(time.Duration(min(a, b)) * time.Hour), start.Add(time.Duration(max(a, b)) * time.Hour)})
	}
	for _, w := range windows {
		for _, sub := range []store.QuotaSubject{userAlice, teamData, {Kind: store.QuotaUser, Name: "carol"}} {
			for _, by := range store.UsageGroupBys {
				q := store.UsageQuery{Subject: sub, From: w[0], To: w[1], GroupBy: by}
				want := h.answer(q, now)
				if got := mustUsage(t, s, q); !slices.Equal(got, want) {
					t.Errorf("Usage(%s %s..%s by %s):\n got  %+v\n want %+v", sub, w[0].Format(time.RFC3339), w[1].Format(time.RFC3339), by, got, want)
				}
			}
		}
	}
}

// usageInterval is one running interval (end zero: still open), or one
// create or failure (at start, end zero).
type usageInterval struct {
	in         container.Instance
	start, end time.Time
}

type usageHistory struct {
	runs, creates, failures []usageInterval
}

// recomputeUsage reads every instance's events (deleted ones' too) and
// makes its running intervals, creates and failures from them alone (made:
// whose each instance is, and what it reserves).
func recomputeUsage(t testing.TB, s store.Store, ids []string, made map[string]container.Instance) usageHistory {
	var h usageHistory
	for _, id := range ids {
		evs := allEvents(t, s, id, 50)
		in := made[id]
		var open *time.Time
		for _, ev := range evs {
			ev.At = ev.At.Truncate(time.Second) // usage counts whole seconds of the writes' times
			if ev.Seq == 1 {
				h.creates = append(h.creates, usageInterval{in: in, start: ev.At})
			}
			runs := ev.Type != container.EventDeleted && store.UsageRuns(ev.To)
			switch {
			case open == nil && runs:
				at := ev.At
				open = &at
			case open != nil && !runs:
				h.runs = append(h.runs, usageInterval{in: in, start: *open, end: ev.At})
				open = nil
			}
			if ev.To == fsm.Failed && ev.From != fsm.Failed {
				h.failures = append(h.failures, usageInterval{in: in, start: ev.At})
			}
		}
		if open != nil {
			h.runs = append(h.runs, usageInterval{in: in, start: *open})
		}
	}
	return h
}

// answer is the usage q asks for at now, summed from the intervals.
func (h usageHistory) answer(q store.UsageQuery, now time.Time) []store.UsageItem {
	rows := map[string]*store.UsageItem{}
	row := func(in container.Instance, day time.Time) *store.UsageItem {
		key := map[string]string{store.UsageByOwner: in.Owner, store.UsageByTeam: in.Team,
			store.UsageByTemplate: in.Template, store.UsageByDay: day.UTC().Format(time.DateOnly)}[q.GroupBy]
		if rows[key] == nil {
			rows[key] = &store.UsageItem{Key: key}
		}
		return rows[key]
	}
	of := func(in container.Instance) bool {
		return (q.Subject.Kind == store.QuotaUser && in.Owner == q.Subject.Name) || (q.Subject.Kind == store.QuotaTeam && in.Team == q.Subject.Name)
	}
	for _, r := range h.runs {
		end := r.end
		if end.IsZero() {
			end = now
		}
		a, b := maxTime(r.start, q.From), minTime(end, minTime(q.To, now))
		if !a.Before(b) {
			continue
		}
		cpu, _ := container.ParseCPU(r.in.Spec.Resources.CPU)
		mem, _ := container.ParseMemory(r.in.Spec.Resources.Memory)
		for day := a.UTC().Truncate(24 * time.Hour); of(r.in) && day.Before(b); day = day.Add(24 * time.Hour) {
			secs := int64(minTime(b, day.Add(24*time.Hour)).Sub(maxTime(a, day)) / time.Second)
			u := row(r.in, day)
			u.RunningSeconds += secs
			u.CPUMilliSeconds += secs * cpu
			u.Memory.Add(secs * mem)
		}
	}
	for _, list := range []struct {
		evs     []usageInterval
		failure bool
	}{{h.creates, false}, {h.failures, true}} {
		for _, e := range list.evs {
			if !of(e.in) || e.start.Before(q.From) || !e.start.Before(q.To) {
				continue
			}
			if u := row(e.in, e.start); list.failure {
				u.Failures++
			} else {
				u.Creates++
			}
		}
	}
	var out []store.UsageItem
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		if !rows[k].IsZero() {
			out = append(out, *rows[k])
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
