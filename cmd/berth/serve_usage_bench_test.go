package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/store/storetest"
)

// BenchmarkServeUsage runs `berth serve` on a bolt store holding 10,000
// instances of team data (storetest.UsageFill, their runs spread over
// about 20 days and all ended, so that neither the start-up recovery nor
// the reconciler changes the store under the measurement), and reports
// p50/p99 of an admin's GET /api/usage?team=data (the last 30 days, by
// day, and by owner) beside GET /livez, the HTTP floor, in the same run.
//
//	make bench BENCH=BenchmarkServeUsage PKGS=./cmd/berth BENCHTIME=1x
func BenchmarkServeUsage(b *testing.B) {
	const n = 10_000
	e := newServeEnv(b, serveOptions{noImageRefresh: true})
	path := filepath.Join(e.dir, "data", "berth.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	clock := &storetest.StepClock{Start: time.Now().Add(-25 * 24 * time.Hour), Step: 50 * time.Second}
	st, err := boltstore.Open(path, boltstore.Options{Clock: clock.Now, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	storetest.UsageFill(b, st, n, 2, 1)
	b.Logf("history from %s to %s", clock.Start.Format(time.RFC3339), clock.Now().Format(time.RFC3339))
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := syncFile(path); err != nil {
		b.Fatal(err)
	}
	e.start()
	b.StartTimer()
	hc := &http.Client{}
	get := func(path string) (time.Duration, []byte) {
		req, err := http.NewRequest(http.MethodGet, "http://"+e.addr+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v: %.200s", path, resp.StatusCode, err, body)
		}
		return took, body
	}
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	window := "&from=" + url.QueryEscape(to.AddDate(0, 0, -30).Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339))
	var byDay, byOwner, livez []time.Duration
	for range 200 * b.N {
		took, body := get("/api/usage?team=data&group_by=day" + window)
		byDay = append(byDay, took)
		var u struct {
			Items []struct {
				Creates int64 `json:"creates"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &u); err != nil {
			b.Fatal(err)
		}
		var creates int64
		for _, it := range u.Items {
			creates += it.Creates
		}
		if creates != n {
			b.Fatalf("usage counts %d creates, want %d", creates, n)
		}
		took, _ = get("/api/usage?team=data&group_by=owner" + window)
		byOwner = append(byOwner, took)
		took, _ = get("/livez")
		livez = append(livez, took)
	}
	b.StopTimer()
	e.stop()
	for name, ds := range map[string][]time.Duration{"usage-day": byDay, "usage-owner": byOwner, "livez": livez} {
		b.ReportMetric(ms(percentile(ds, 50)), name+"-p50-ms")
		b.ReportMetric(ms(percentile(ds, 99)), name+"-p99-ms")
	}
	b.ReportMetric(float64(percentile(byDay, 50))/float64(percentile(livez, 50)), "usage-day/livez-p50")
}
