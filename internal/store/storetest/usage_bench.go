package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// StepClock is a clock that moves forward by Step at every reading, so
// that writes made by many goroutines spread over a span of time (a
// usage benchmark's history) without any of them setting it.
type StepClock struct {
	Start time.Time
	Step  time.Duration
	n     atomic.Int64
}

// Now returns the next reading.
func (c *StepClock) Now() time.Time { return c.Start.Add(time.Duration(c.n.Add(1)) * c.Step) }

// UsageFillOwners is how many owners UsageFill spreads its instances over,
// all of team "data".
const UsageFillOwners = 10

// UsageFill makes n instances of team "data" (UsageFillOwners owners, two
// templates), each created and run; one in stopEvery is then stopped, the
// rest stay running. With a StepClock the runs spread over its span.
func UsageFill(tb testing.TB, s store.Store, n, workers, stopEvery int) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	clock := NewClock()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				p := teamCreate(clock, "user-"+string(rune('a'+i%UsageFillOwners)), "data")
				if i%3 == 0 {
					p.Instance.Template, p.Instance.Spec.Resources = "python", container.Resources{CPU: "2", Memory: "3Gi"}
				}
				statuses := []fsm.Status{fsm.Creating, fsm.Running}
				if i%int64(stopEvery) == 0 {
					statuses = append(statuses, fsm.Stopped)
				}
				if _, err := fill(s, p, statuses...); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// fill creates p's instance and moves it through statuses.
func fill(s store.Store, p store.CreateParams, statuses ...fsm.Status) (container.Instance, error) {
	in, err := s.CreateInstance(context.Background(), p)
	for _, to := range statuses {
		if err != nil {
			break
		}
		in, err = usageStep(s, in, to)
	}
	return in, err
}

func usageStep(s store.Store, in container.Instance, to fsm.Status) (container.Instance, error) {
	return s.Transition(context.Background(), store.TransitionParams{
		ID: in.ID, ExpectVersion: in.Version, From: in.Status, To: to,
		Event: &container.Event{Type: "Bench" + string(to), From: in.Status, To: to},
	})
}

// UsageBenchQuery is the benchmarks' query at now: team data's last 30
// days to the next whole hour, by day.
func UsageBenchQuery(now time.Time) store.UsageQuery {
	to := now.UTC().Truncate(time.Hour).Add(time.Hour)
	return store.UsageQuery{Subject: store.QuotaSubject{Kind: store.QuotaTeam, Name: "data"},
		From: to.AddDate(0, 0, -30), To: to, GroupBy: store.UsageByDay}
}

// BenchUsage times 200 usage queries (UsageBenchQuery) an iteration,
// alternating with as many GetInstance calls of one instance, the store's
// cheapest read, as the baseline of the same run, and reports the mean of
// each and their ratio. It checks that each answer counts n creates.
func BenchUsage(b *testing.B, s store.Store, now func() time.Time, n int) {
	ctx := context.Background()
	probe, err := s.CreateInstance(ctx, NewCreate(NewClock(), "probe"))
	if err != nil {
		b.Fatal(err)
	}
	var usage, get time.Duration
	rounds := 200 * b.N
	b.ResetTimer()
	for range rounds {
		start := time.Now()
		items, err := s.Usage(ctx, UsageBenchQuery(now()))
		usage += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		var creates int64
		for _, it := range items {
			creates += it.Creates
		}
		if creates != int64(n) {
			b.Fatalf("usage counts %d creates, want %d", creates, n)
		}
		start = time.Now()
		if _, err := s.GetInstance(ctx, probe.ID); err != nil {
			b.Fatal(err)
		}
		get += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(usage.Microseconds())/1000/float64(rounds), "usage-ms")
	b.ReportMetric(float64(get.Microseconds())/1000/float64(rounds), "get-ms")
	b.ReportMetric(float64(usage)/float64(get), "usage/get")
}
