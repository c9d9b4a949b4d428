package emulate_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/samtemplate"
)

// invokeHook is a slog.Handler that tells on of every invocation the
// emulator logs ("invoke": Function.Invoke writes it as the invocation
// ends, before a poller acknowledges its messages), then passes the record
// on.
type invokeHook struct {
	slog.Handler
	on func(fn string, instance int)
}

func (h invokeHook) Handle(ctx context.Context, r slog.Record) error {
	if h.on != nil && r.Message == "invoke" {
		var fn string
		instance := -1 // no instance: it never started
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "function":
				fn = a.Value.String()
			case "instance":
				instance = int(a.Value.Int64())
			}
			return true
		})
		h.on(fn, instance)
	}
	return h.Handler.Handle(ctx, r)
}

func (h invokeHook) WithAttrs(as []slog.Attr) slog.Handler {
	return invokeHook{Handler: h.Handler.WithAttrs(as), on: h.on}
}

func (h invokeHook) WithGroup(name string) slog.Handler {
	return invokeHook{Handler: h.Handler.WithGroup(name), on: h.on}
}

// costRecorder attributes what an emulated stack does to windows (one
// operation, or a run of reconcile passes): the meter's counts between the
// window's start and end, and the invocations that ended in it.
type costRecorder struct {
	st     *stack
	memory map[string]int // MB, per function, from template.yaml

	mu      sync.Mutex
	open    int // the open window, -1: none
	windows []costWindow
	invs    []invocationRec
	calls   map[string]int // invocations per function so far
	changed chan struct{}  // closed at each invocation
}

// invocationRec is one invocation as the hook saw it.
type invocationRec struct {
	fn       string
	instance int
	window   int
}

// costWindow is what one window used.
type costWindow struct {
	name  string
	start meterCounts
	aws   meterCounts
	// Invocations per function; BilledMS, GBSeconds and LogBytes are their
	// sums (filled by settle).
	Invocations map[string]float64
	BilledMS    float64
	GBSeconds   float64
	LogBytes    float64
}

func newCostRecorder(b *testing.B) (*costRecorder, setup) {
	stack, err := samtemplate.Load(templatePath, samtemplate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := &costRecorder{open: -1, calls: map[string]int{}, changed: make(chan struct{}), memory: map[string]int{}}
	for id, f := range stack.Functions {
		r.memory[id] = f.MemoryMB
	}
	return r, setup{meter: true, onInvoke: r.onInvoke}
}

func (r *costRecorder) onInvoke(fn string, instance int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invs = append(r.invs, invocationRec{fn: fn, instance: instance, window: r.open})
	r.calls[fn]++
	close(r.changed)
	r.changed = make(chan struct{})
}

// begin opens a window.
func (r *costRecorder) begin(name string) {
	start := r.st.meter.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open >= 0 {
		r.st.t.Fatalf("window %s opened inside %s", name, r.windows[r.open].name)
	}
	r.windows = append(r.windows, costWindow{name: name, start: start, Invocations: map[string]float64{}})
	r.open = len(r.windows) - 1
}

// end closes the open window.
func (r *costRecorder) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &r.windows[r.open]
	w.aws = r.st.meter.snapshot().sub(w.start)
	r.open = -1
}

// count returns the invocations of fn so far and a channel closed at the
// next invocation of any function.
func (r *costRecorder) count(fn string) (int, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[fn], r.changed
}

// waitCalls waits until fn has been invoked n times in all.
func (r *costRecorder) waitCalls(fn string, n int, timeout time.Duration) {
	r.st.t.Helper()
	deadline := time.After(timeout)
	for {
		c, changed := r.count(fn)
		if c >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			r.st.t.Fatalf("%s: %d invocations after %v, want %d", fn, c, timeout, n)
		}
	}
}

// waitQueuesEmpty waits until no queue of the stack holds a message,
// visible or in flight: the pollers have acknowledged what the functions
// did.
func (r *costRecorder) waitQueuesEmpty(timeout time.Duration) {
	st := r.st
	st.t.Helper()
	ctx := context.Background()
	out, err := st.sqs.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(st.name)})
	if err != nil || len(out.QueueUrls) == 0 {
		st.t.Fatalf("the stack's queues: %v (%d)", err, len(out.QueueUrls))
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		busy := ""
		for _, u := range out.QueueUrls {
			a, err := st.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
			if err != nil {
				st.t.Fatalf("queue %s: %v", u, err)
			}
			for _, v := range a.Attributes {
				if v != "0" {
					busy = u
				}
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("queue %s still holds messages after %v", busy, timeout)
		}
		<-tick.C
	}
}

// op measures one operation in a window of its own: the request through
// the front door until the worker that carries it out has ended and the
// queues are empty again.
func (r *costRecorder) op(name, method, path string, body any, worker string) response {
	st := r.st
	st.t.Helper()
	disp, _ := r.count("DispatcherFunction")
	work, _ := r.count(worker)
	r.begin(name)
	resp := st.do(method, path, aliceToken, body)
	if resp.status != 202 {
		st.t.Fatalf("%s: %d %s", name, resp.status, resp.body)
	}
	r.waitCalls("DispatcherFunction", disp+1, time.Minute)
	r.waitCalls(worker, work+1, 2*time.Minute)
	r.waitQueuesEmpty(time.Minute)
	r.end()
	return resp
}

// rieReport is one invocation as its RIE logged it: its billed time (the
// invoke's Duration plus the Init Duration of a cold one, rounded up to
// the millisecond as AWS bills custom runtimes) and the bytes of every
// line it printed (START … END, REPORT: what CloudWatch Logs ingests).
type rieReport struct {
	BilledMS float64
	LogBytes int
}

// rieReports reads the function output of an emulated stack: per
// "Function#instance", its invocations' reports in order. The lines an
// instance prints belong to the invocation whose REPORT follows them.
func rieReports(logs string) map[string][]rieReport {
	out := map[string][]rieReport{}
	pending := map[string]int{}
	for _, l := range strings.Split(logs, "\n") {
		if !strings.HasPrefix(l, "[") {
			continue
		}
		key, line, ok := strings.Cut(l[1:], "] ")
		if !ok || !strings.Contains(key, "#") {
			continue
		}
		pending[key] += len(line) + 1
		if !strings.HasPrefix(line, "REPORT RequestId: ") {
			continue
		}
		var ms float64
		for _, f := range strings.Split(line, "\t") {
			for _, name := range []string{"Init Duration: ", "Duration: "} {
				if v, ok := strings.CutPrefix(strings.TrimSpace(f), name); ok {
					if d, err := strconv.ParseFloat(strings.TrimSuffix(v, " ms"), 64); err == nil {
						ms += d
					}
				}
			}
		}
		out[key] = append(out[key], rieReport{BilledMS: math.Ceil(ms), LogBytes: pending[key]})
		pending[key] = 0
	}
	return out
}

// settle pairs each windowed invocation with its RIE's report (the n-th
// invocation of an instance with its n-th REPORT), waiting for reports
// still on their way through the pipes.
func (r *costRecorder) settle() {
	r.st.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reports := rieReports(r.st.logs.String())
		r.mu.Lock()
		seen := map[string]int{}
		missing := ""
		for i := range r.windows {
			w := &r.windows[i]
			w.Invocations, w.BilledMS, w.GBSeconds, w.LogBytes = map[string]float64{}, 0, 0, 0
		}
		for _, inv := range r.invs {
			if inv.instance < 0 {
				continue
			}
			key := fmt.Sprintf("%s#%d", inv.fn, inv.instance)
			n := seen[key]
			seen[key]++
			if inv.window < 0 {
				continue
			}
			w := &r.windows[inv.window]
			w.Invocations[inv.fn]++
			if n >= len(reports[key]) {
				missing = key
				continue
			}
			rep := reports[key][n]
			w.BilledMS += rep.BilledMS
			w.GBSeconds += rep.BilledMS / 1000 * float64(r.memory[inv.fn]) / 1024
			w.LogBytes += float64(rep.LogBytes)
		}
		r.mu.Unlock()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			r.st.t.Fatalf("no REPORT line for an invocation of %s", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// costFigures are the billable counts of one window, or their mean.
type costFigures struct {
	WRU, RRU, DynamoDBRequests, SQSRequests, APIRequests, Invocations, BilledMS, GBSeconds, LogBytes float64
	// QueryBytes is not billed as such: read units grow with it.
	QueryBytes float64
}

// figures sums the windows named name, divided by per.
func (r *costRecorder) figures(name string, per float64) (costFigures, meterCounts, map[string]float64) {
	var f costFigures
	total := newMeterCounts()
	invs := map[string]float64{}
	for _, w := range r.windows {
		if w.name != name {
			continue
		}
		total = total.add(w.aws)
		for fn, n := range w.Invocations {
			invs[fn] += n
			f.Invocations += n
		}
		f.BilledMS += w.BilledMS
		f.GBSeconds += w.GBSeconds
		f.LogBytes += w.LogBytes
	}
	f.WRU, f.RRU, f.QueryBytes = total.WriteUnits, total.ReadUnits, total.QueryBytes/per
	f.DynamoDBRequests = total.count("dynamodb")
	// An empty receive is the pollers' idle cost (per queue and hour, not
	// per operation; cost.md prices it apart), and the emulator's pollers
	// wait 2 s where Lambda's wait 20 s.
	f.SQSRequests = total.count("sqs") - total.EmptyReceives
	f.APIRequests = invs["ApiFunction"]
	f.Invocations, f.BilledMS, f.GBSeconds, f.LogBytes = f.Invocations/per, f.BilledMS/per, f.GBSeconds/per, f.LogBytes/per
	f.WRU, f.RRU, f.DynamoDBRequests, f.SQSRequests, f.APIRequests = f.WRU/per, f.RRU/per, f.DynamoDBRequests/per, f.SQSRequests/per, f.APIRequests/per
	for fn := range invs {
		invs[fn] /= per
	}
	return f, total, invs
}

// report prints the figures as metrics named prefix-<unit>.
func (f costFigures) report(b *testing.B, prefix string) {
	f.reportCounts(b, prefix)
	b.ReportMetric(f.BilledMS, prefix+"-lambda-ms")
	b.ReportMetric(f.GBSeconds*1e3, prefix+"-lambda-mGBs")
}

// reportCounts prints the figures that are counts, not durations: a
// difference of two durations on a shared machine is noise.
func (f costFigures) reportCounts(b *testing.B, prefix string) {
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{f.WRU, "WRU"}, {f.RRU, "RRU"}, {f.DynamoDBRequests, "ddb-req"}, {f.SQSRequests, "sqs-req"},
		{f.APIRequests, "api-req"}, {f.Invocations, "lambda-inv"}, {f.LogBytes, "log-B"}, {f.QueryBytes, "query-B"},
	} {
		b.ReportMetric(m.v, prefix+"-"+m.unit)
	}
}

// logBreakdown logs what a window's figures are made of, on one line (a
// benchmark's log keeps only its first lines): requests per action, units
// per table and index, errors, invocations per function.
func logBreakdown(b *testing.B, name string, per float64, total meterCounts, invs map[string]float64) {
	var parts []string
	for _, m := range []struct {
		what string
		m    map[string]float64
	}{{"requests", total.Requests}, {"units", total.Units}, {"errors", total.Errors}, {"invocations", invs}} {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			v := m.m[k]
			if m.what != "invocations" {
				v /= per
			}
			kv = append(kv, fmt.Sprintf("%s=%.3g", k, v))
		}
		parts = append(parts, m.what+": "+strings.Join(kv, " "))
	}
	parts = append(parts, fmt.Sprintf("empty receives: %.3g", total.EmptyReceives/per))
	b.Logf("%s (per one): %s", name, strings.Join(parts, "; "))
}
