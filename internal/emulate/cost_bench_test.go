package emulate_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkCost counts, on the emulated AWS path, what AWS bills for each
// lifecycle operation and for a reconcile pass: DynamoDB write and read
// units (ConsumedCapacity, as DynamoDB Local reports it) and requests, SQS
// requests, API Gateway requests, Lambda invocations, their billed
// milliseconds and GB-seconds at template.yaml's memory, and the bytes of
// the functions' logs. docs/cost.md turns these counts into dollars.
//
//	make bench BENCH=Cost PKGS=./internal/emulate BENCHTIME=1x
func BenchmarkCost(b *testing.B) {
	b.Run("lifecycle", benchmarkCostLifecycle)
	b.Run("reconcile", benchmarkCostReconcile)
}

// benchmarkCostLifecycle measures create, stop, start and delete, each in
// a window of its own, with the functions warm (one lifecycle first, not
// measured) and no reconcile pass (its schedule is an hour).
func benchmarkCostLifecycle(b *testing.B) {
	rec, s := newCostRecorder(b)
	s.scheduleEvery = time.Hour
	st := start(b, s)
	rec.st = st
	// A container that stops when asked: the stop worker's billed time is
	// the container's own stop (one that ignores SIGTERM costs the whole
	// grace period).
	st.putTemplate("polite", []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"})
	// prefix names the windows: the warm-up's are not reported.
	lifecycle := func(prefix string, i int) {
		resp := rec.op(prefix+"create", http.MethodPost, "/api/containers", map[string]any{"template": "polite", "name": fmt.Sprintf("cost-%d", i)}, "CreateWorkerFunction")
		id := resp.json(b)["id"].(string)
		st.wait(aliceToken, id, "running", time.Minute)
		rec.op(prefix+"stop", http.MethodPost, "/api/containers/"+id+"/stop", nil, "LifecycleWorkerFunction")
		st.wait(aliceToken, id, "stopped", time.Minute)
		rec.op(prefix+"start", http.MethodPost, "/api/containers/"+id+"/start", nil, "LifecycleWorkerFunction")
		st.wait(aliceToken, id, "running", time.Minute)
		rec.op(prefix+"delete", http.MethodDelete, "/api/containers/"+id, nil, "LifecycleWorkerFunction")
		if r := st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusNotFound {
			b.Fatalf("after the delete: %d %s", r.status, r.body)
		}
	}
	lifecycle("warm-up ", 0)
	b.ResetTimer()
	for i := range b.N {
		lifecycle("", i+1)
	}
	b.StopTimer()
	rec.settle()
	var mix costFigures
	for _, op := range []string{"create", "stop", "start", "delete"} {
		f, total, invs := rec.figures(op, float64(b.N))
		if f.WRU <= 0 || f.APIRequests != 1 || f.Invocations < 3 || f.SQSRequests < 2 || f.BilledMS <= 0 {
			b.Errorf("%s: implausible counts %+v", op, f)
		}
		f.report(b, op)
		logBreakdown(b, op, float64(b.N), total, invs)
		mix = mix.plus(f)
	}
	mix.report(b, "mix")
}

// plus adds two sets of figures.
func (f costFigures) plus(o costFigures) costFigures {
	return costFigures{WRU: f.WRU + o.WRU, RRU: f.RRU + o.RRU, DynamoDBRequests: f.DynamoDBRequests + o.DynamoDBRequests,
		SQSRequests: f.SQSRequests + o.SQSRequests, APIRequests: f.APIRequests + o.APIRequests, Invocations: f.Invocations + o.Invocations,
		BilledMS: f.BilledMS + o.BilledMS, GBSeconds: f.GBSeconds + o.GBSeconds, LogBytes: f.LogBytes + o.LogBytes,
		QueryBytes: f.QueryBytes + o.QueryBytes}
}

// costReconcileSizes are the running instances a pass is measured at: the
// fixed cost (0), and two sizes whose line through it is checked at the
// middle one (the pass is linear in N, so N = 10,000 is read off it).
var costReconcileSizes = []int{0, 4, 12}

// costPasses is how many passes each size is measured over (at least).
const costPasses = 3

// benchmarkCostReconcile measures reconcile passes with 0, 4 and 12
// running instances and nothing to repair: the fixed cost per pass, the
// counts per instance reconciled, and how far the middle size is off the
// line through the other two (linearity, 1 = on it).
func benchmarkCostReconcile(b *testing.B) {
	rec, s := newCostRecorder(b)
	s.scheduleEvery = 2 * time.Second
	st := start(b, s)
	rec.st = st
	passes := max(b.N, costPasses)
	var ids []string
	per := map[int]costFigures{}
	b.ResetTimer()
	for _, n := range costReconcileSizes {
		b.StopTimer()
		for len(ids) < n {
			ids = append(ids, st.create(aliceToken, "busybox", fmt.Sprintf("rec-%d", len(ids))))
		}
		for _, id := range ids {
			st.wait(aliceToken, id, "running", 2*time.Minute)
		}
		// A pass that began before the last instance ran may still be
		// going: the one after the next began with all of them running.
		done, _ := rec.count("ReconcilerFunction")
		rec.waitCalls("ReconcilerFunction", done+2, 2*time.Minute)
		b.StartTimer()
		from, _ := rec.count("ReconcilerFunction")
		rec.begin(fmt.Sprintf("pass-%d", n))
		rec.waitCalls("ReconcilerFunction", from+passes, time.Duration(passes)*time.Minute)
		rec.end()
	}
	b.StopTimer()
	rec.settle()
	for _, n := range costReconcileSizes {
		f, total, invs := rec.figures(fmt.Sprintf("pass-%d", n), float64(passes))
		if f.RRU <= 0 || f.Invocations < 1 || f.BilledMS <= 0 {
			b.Errorf("pass at %d: implausible counts %+v", n, f)
		}
		if f.Invocations != 1 {
			b.Errorf("a pass at %d with nothing to repair invoked more than the reconciler: %v", n, invs)
		}
		per[n] = f
		logBreakdown(b, fmt.Sprintf("pass-%d", n), float64(passes), total, invs)
	}
	lo, mid, hi := costReconcileSizes[0], costReconcileSizes[1], costReconcileSizes[2]
	fixed := per[lo]
	slope := per[hi].plus(fixed.scale(-1)).scale(1 / float64(hi-lo))
	fixed.report(b, "fixed")
	// The pass's duration per instance is not reported: at these sizes it
	// is well inside the noise of a shared machine (docs/cost.md).
	slope.reportCounts(b, "per-instance")
	predicted := fixed.plus(slope.scale(float64(mid - lo)))
	b.ReportMetric(per[mid].RRU/predicted.RRU, "linearity-RRU")
	b.ReportMetric(per[mid].QueryBytes/predicted.QueryBytes, "linearity-query-B")
	for _, n := range costReconcileSizes {
		per[n].report(b, fmt.Sprintf("pass%d", n))
	}
}

// scale multiplies every figure by k.
func (f costFigures) scale(k float64) costFigures {
	return costFigures{WRU: k * f.WRU, RRU: k * f.RRU, DynamoDBRequests: k * f.DynamoDBRequests, SQSRequests: k * f.SQSRequests,
		APIRequests: k * f.APIRequests, Invocations: k * f.Invocations, BilledMS: k * f.BilledMS, GBSeconds: k * f.GBSeconds, LogBytes: k * f.LogBytes,
		QueryBytes: k * f.QueryBytes}
}
