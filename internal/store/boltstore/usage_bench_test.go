package boltstore

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store/storetest"
)

// usageBench is the benchmark's store, filled once for every b.N the
// benchmark is run with.
var usageBench struct {
	once  sync.Once
	s     *Store
	clock *storetest.StepClock
}

// BenchmarkUsage times a usage query (a team's last 30 days by day) over
// 10,000 instances, run over about 23 days, on the store berth serve runs
// on, beside a GetInstance in the same run (storetest.BenchUsage).
//
//	make bench BENCH=BenchmarkUsage PKGS=./internal/store/boltstore BENCHTIME=200x
func BenchmarkUsage(b *testing.B) {
	const n = 10_000
	u := &usageBench
	u.once.Do(func() {
		u.clock = &storetest.StepClock{Start: time.Now().Add(-25 * 24 * time.Hour), Step: 50 * time.Second}
		var err error
		if u.s, err = Open(filepath.Join(b.TempDir(), "berth.db"), Options{Clock: u.clock.Now, NoSync: true}); err != nil {
			b.Fatal(err)
		}
		storetest.UsageFill(b, u.s, n, 4, 4)
		b.Logf("history from %s to %s", u.clock.Start.Format(time.RFC3339), u.clock.Now().Format(time.RFC3339))
	})
	storetest.BenchUsage(b, u.s, u.clock.Now, n)
}
