package promsink

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth-io/berth/internal/metrics"
)

// TestPrometheusSink: what an Emitter emits is served as Prometheus
// metrics of the names Name gives, read back by Prometheus's own
// text parser: counters summed, durations as histograms in seconds,
// gauges their last value, dimension sets merged into one label set.
func TestPrometheusSink(t *testing.T) {
	sink := New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sink)
	var buf bytes.Buffer
	e := metrics.New(&buf, map[string]string{"Service": "berth-local"}, sink)
	e.Count("DeadLettered", 1, "Op", "create")
	e.Count("DeadLettered", 2, "Op", "create")
	e.Count("DeadLettered", 1, "Op", "stop")
	e.Duration("CreateDuration", 1500*time.Millisecond)
	e.Duration("CreateDuration", 20*time.Millisecond)
	e.Duration("DispatchLatency", 3*time.Millisecond, "Op", "create", "Stage", "worker")
	e.Duration("DispatchLatency", 4*time.Millisecond, "Queue", "create")
	e.Emit("OutboxOldestPendingAge", 7, metrics.Seconds)
	e.Emit("OutboxOldestPendingAge", 3, metrics.Seconds)
	if buf.Len() == 0 {
		t.Error("the EMF lines are no longer written beside the sink")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var text bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
			t.Fatal(err)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	got, err := p.TextToMetricFamilies(&text)
	if err != nil {
		t.Fatalf("the text does not parse: %v", err)
	}
	dl := got["berth_dead_lettered_total"]
	if dl == nil || len(dl.Metric) != 2 {
		t.Fatalf("berth_dead_lettered_total: %v", dl)
	}
	for _, m := range dl.Metric {
		want := map[string]float64{"create": 3, "stop": 1}[m.Label[0].GetValue()]
		if m.Label[0].GetName() != "op" || m.Counter.GetValue() != want {
			t.Errorf("dead lettered %v = %v, want %v", m.Label, m.Counter.GetValue(), want)
		}
	}
	cd := got["berth_create_duration_seconds"]
	if cd == nil || len(cd.Metric) != 1 {
		t.Fatalf("berth_create_duration_seconds: %v", cd)
	}
	h := cd.Metric[0].Histogram
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 1.52 {
		t.Errorf("create duration: count %d sum %v, want 2 and 1.52", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.Bucket {
		want := uint64(0)
		if b.GetUpperBound() >= 0.02 {
			want++
		}
		if b.GetUpperBound() >= 1.5 {
			want++
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	dlat := got["berth_dispatch_latency_seconds"]
	if dlat == nil || len(dlat.Metric) != 2 {
		t.Fatalf("berth_dispatch_latency_seconds: %v", dlat)
	}
	if g := got["berth_outbox_oldest_pending_age_seconds"]; g == nil || g.Metric[0].Gauge.GetValue() != 3 {
		t.Errorf("oldest pending age: %v, want the gauge at 3", g)
	}
	for name := range got {
		if !bytes.Contains([]byte(name), []byte("berth_")) {
			t.Errorf("%s: not one of berth's", name)
		}
	}
}

// TestName: the names Prometheus conventions want.
func TestName(t *testing.T) {
	for _, tc := range []struct{ name, unit, want string }{
		{"CreateDuration", metrics.Milliseconds, "berth_create_duration_seconds"},
		{"UnavailableGaveUp", metrics.Count, "berth_unavailable_gave_up_total"},
		{"OutboxOldestPendingAge", metrics.Seconds, "berth_outbox_oldest_pending_age_seconds"},
		{"HTTPRequests", metrics.Count, "berth_http_requests_total"},
	} {
		if got := Name(tc.name, tc.unit); got != tc.want {
			t.Errorf("Name(%s, %s) = %s, want %s", tc.name, tc.unit, got, tc.want)
		}
	}
}

// TestDiscardStillFeeds: an emitter to io.Discard still feeds its sinks.
func TestDiscardStillFeeds(t *testing.T) {
	sink := New()
	metrics.New(io.Discard, nil, sink).Count("Retries", 1, "Op", "stop")
	if len(sink.families) != 1 {
		t.Fatalf("families %v", sink.families)
	}
}
