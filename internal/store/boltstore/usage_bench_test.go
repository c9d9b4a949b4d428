package boltstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store/storetest"
)

// BenchmarkUsage times a usage query (a team's last 30 days by day) over
// 10,000 instances, run over about 20 days, on the store berth serve runs
// on, beside a GetInstance in the same run: 200 of each an iteration
// (storetest.BenchUsage). The fill dominates: run it once.
//
//	make bench BENCH=BenchmarkUsage PKGS=./internal/store/boltstore BENCHTIME=1x
func BenchmarkUsage(b *testing.B) {
	const n = 10_000
	clock := &storetest.StepClock{Start: time.Now().Add(-25 * 24 * time.Hour), Step: 50 * time.Second}
	s, err := Open(filepath.Join(b.TempDir(), "berth.db"), Options{Clock: clock.Now, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.UsageFill(b, s, n, 4, 4)
	b.Logf("history from %s to %s", clock.Start.Format(time.RFC3339), clock.Now().Format(time.RFC3339))
	storetest.BenchUsage(b, s, clock.Now, n)
}
