package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
)

// scraperToken is the test's server.metrics_token, set through its
// environment variable.
const scraperToken = "test-scraper-token"

// TestServeMetrics: a real berth serve creates containers on the real
// engine, and GET /metrics, read by Prometheus's own text parser, counts
// what happened: the creates accepted and refused, each create's duration
// in the create → running histogram, the state loop's events, and the
// gauges of the queues, the create slots and the admission. Admins and the
// scraper's token read it; a user is 403, no token 401.
func TestServeMetrics(t *testing.T) {
	e := newServeEnv(t, serveOptions{noImageRefresh: true, maxPending: 4})
	e.env = append(e.env, "BERTH_SERVER_METRICS_TOKEN="+scraperToken)
	e.start()
	e.putTemplates()
	if want := "  metrics:  http://" + e.addr + "/metrics (Prometheus; admins and server.metrics_token)\n"; !strings.Contains(e.out.String(), want) {
		t.Errorf("the start-up summary does not name the metrics route (never the token):\n%s", e.out)
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a user", aliceToken, http.StatusForbidden},
		{"an admin", adminToken, http.StatusOK},
		{"the scraper", scraperToken, http.StatusOK},
	} {
		if r := e.call("GET", httpapi.MetricsPath, tc.token, nil); r.status != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, r.status, tc.want, r.body)
		}
	}

	const n = 3
	var ids []string
	for range n {
		ids = append(ids, e.create("sleeper").ID)
	}
	// One more than create_queue_max_pending allows while they are
	// pending is refused (429); whatever the timing, the refusals are
	// counted as what they were.
	refused := 0
	for range 4 {
		if r := e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "ok"}); r.status == http.StatusTooManyRequests {
			refused++
		} else if r.status == http.StatusAccepted {
			ids = append(ids, e.instance(r).ID)
		} else {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	for _, id := range ids[:n] {
		e.waitFor(id, fsm.Running, 2*time.Minute)
	}

	// The workers measure a create once it is done, after the instance is
	// running; the state loop sees the engine's events on its own time.
	var mfs map[string]*dto.MetricFamily
	deadline := time.Now().Add(time.Minute)
	for {
		mfs = e.scrape(scraperToken)
		if histogramCount(mfs["berth_create_duration_seconds"]) >= n && sum(mfs["berth_watcher_events_total"], map[string]string{"kind": "docker"}) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within a minute: %d creates measured, %v state loop events; want %d of each\nserver log:\n%s",
				histogramCount(mfs["berth_create_duration_seconds"]), sum(mfs["berth_watcher_events_total"], nil), n, tail(e.logs.String(), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}

	accepted := sum(mfs["berth_http_requests_total"], map[string]string{"route": "/api/containers", "method": "POST", "code": "202"})
	if want := float64(len(ids)); accepted != want {
		t.Errorf("creates accepted: %v, want %v", accepted, want)
	}
	if got := sum(mfs["berth_http_requests_total"], map[string]string{"route": "/api/containers", "method": "POST", "code": "429"}); got != float64(refused) {
		t.Errorf("creates refused: %v, want %d", got, refused)
	}
	if got := sum(mfs["berth_http_requests_total"], map[string]string{"route": httpapi.MetricsPath, "code": "401"}); got != 1 {
		t.Errorf("unauthenticated scrapes counted: %v, want 1", got)
	}
	if got := histogramCount(mfs["berth_queue_age_seconds"]); got < n {
		t.Errorf("queue ages observed: %d, want at least %d", got, n)
	}
	for _, queue := range []string{"create", "lifecycle", "notify"} {
		for _, state := range []string{"visible", "in_flight", "delayed"} {
			if !has(mfs["berth_queue_messages"], map[string]string{"queue": queue, "state": state}) {
				t.Errorf("no berth_queue_messages{queue=%q,state=%q}", queue, state)
			}
		}
		if !has(mfs["berth_queue_dead_letters"], map[string]string{"queue": queue}) {
			t.Errorf("no berth_queue_dead_letters{queue=%q}", queue)
		}
	}
	for name, want := range map[string]float64{"berth_create_slots": 3, "berth_admission_limit": 4} {
		if got := sum(mfs[name], nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if !has(mfs["berth_admission_in_use"], nil) || !has(mfs["berth_create_slots_in_use"], nil) || mfs["go_goroutines"] == nil {
		t.Error("the admission, slot or Go runtime gauges are missing")
	}
	if strings.Contains(e.out.String()+e.logs.String(), scraperToken) {
		t.Error("the scraper's token is printed")
	}
}

// scrape reads GET /metrics with token and parses it as Prometheus does.
func (e *serveEnv) scrape(token string) map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.must(e.call("GET", httpapi.MetricsPath, token, nil), http.StatusOK)
	if ct := r.header.Get("Content-Type"); expfmt.ResponseFormat(r.header).FormatType() != expfmt.TypeTextPlain {
		e.t.Fatalf("Content-Type %q: not the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatalf("GET /metrics does not parse: %v\n%s", err, r.body)
	}
	return mfs
}

// matches reports whether m has every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// sum adds the counter or gauge values of mf's series with the labels.
func sum(mf *dto.MetricFamily, labels map[string]string) float64 {
	total := 0.0
	for _, m := range mf.GetMetric() {
		if matches(m, labels) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

// has reports whether mf has a series with the labels.
func has(mf *dto.MetricFamily, labels map[string]string) bool {
	for _, m := range mf.GetMetric() {
		if matches(m, labels) {
			return true
		}
	}
	return false
}

// histogramCount is the observations of mf's series.
func histogramCount(mf *dto.MetricFamily) uint64 {
	var n uint64
	for _, m := range mf.GetMetric() {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
