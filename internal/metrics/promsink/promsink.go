// Package promsink keeps the metrics an internal/metrics Emitter emits as
// Prometheus metrics, for `berth serve`'s GET /metrics. It is a package of
// its own so that the Lambda functions, which emit the same metrics to
// CloudWatch, do not link the Prometheus client.
package promsink

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth-io/berth/internal/metrics"
)

// Sink is a metrics.Sink that keeps what an Emitter emits as Prometheus
// metrics, and a prometheus.Collector that hands them to a registry. Each
// EMF metric becomes one family named by Name:
//
//   - Count: a counter, berth_<name>_total, adding every value emitted;
//   - Milliseconds: a histogram in seconds, berth_<name>_seconds, of
//     DurationBuckets;
//   - any other unit (Seconds): a gauge, berth_<name>_<unit>, the last value.
//
// Dimensions become labels of the same names in snake case. A metric
// emitted with different dimension sets (DispatchLatency: the worker's Op
// and Stage, the dispatcher's Queue) has the union of them as its labels,
// empty where a call gave none, which Prometheus reads as absent.
type Sink struct {
	mu       sync.Mutex
	families map[string]*family
}

// DurationBuckets are the upper bounds (seconds) of the histograms of
// duration metrics: from a dispatch (milliseconds) to a create that pulls
// an image (minutes).
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New returns an empty sink; register it with a prometheus.Registerer to
// serve what it receives.
func New() *Sink { return &Sink{families: map[string]*family{}} }

var (
	_ prometheus.Collector = (*Sink)(nil)
	_ metrics.Sink         = (*Sink)(nil)
)

// family is one metric name's series.
type family struct {
	name, help string
	kind       prometheus.ValueType // CounterValue, GaugeValue, or UntypedValue for a histogram
	histogram  bool
	labels     map[string]bool
	series     map[string]*series // by labelKey
}

// series is one label set's state.
type series struct {
	labels  map[string]string
	value   float64  // counter's sum or gauge's last value
	count   uint64   // histogram's observations
	sum     float64  // histogram's sum
	buckets []uint64 // histogram's counts per DurationBuckets bound (not cumulative)
}

// Name is the family an EMF metric name of the given unit feeds:
// CreateDuration (Milliseconds) is berth_create_duration_seconds,
// DeadLettered (Count) berth_dead_lettered_total.
func Name(name, unit string) string {
	base := "berth_" + snake(name)
	switch unit {
	case metrics.Count:
		return base + "_total"
	case metrics.Milliseconds:
		return base + "_seconds"
	default:
		return base + "_" + snake(unit)
	}
}

// snake writes a CamelCase name in snake case: UnavailableGaveUp is
// unavailable_gave_up.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Observe records one value (metrics.Sink).
func (p *Sink) Observe(name string, v float64, unit string, dims []string) {
	labels := map[string]string{}
	for i := 0; i+1 < len(dims); i += 2 {
		labels[snake(dims[i])] = dims[i+1]
	}
	fq := Name(name, unit)
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.families[fq]
	if f == nil {
		f = &family{name: fq, help: "berth's metric " + name + " (" + unit + ")", kind: prometheus.GaugeValue,
			labels: map[string]bool{}, series: map[string]*series{}}
		switch unit {
		case metrics.Count:
			f.kind = prometheus.CounterValue
		case metrics.Milliseconds:
			f.histogram, f.help = true, f.help+", in seconds"
		}
		p.families[fq] = f
	}
	for k := range labels {
		f.labels[k] = true
	}
	key := labelKey(labels)
	s := f.series[key]
	if s == nil {
		s = &series{labels: labels}
		if f.histogram {
			s.buckets = make([]uint64, len(DurationBuckets))
		}
		f.series[key] = s
	}
	switch {
	case f.histogram:
		sec := v / 1000
		s.count++
		s.sum += sec
		if i, _ := slices.BinarySearch(DurationBuckets, sec); i < len(DurationBuckets) {
			s.buckets[i]++
		}
	case f.kind == prometheus.CounterValue:
		s.value += v
	default:
		s.value = v
	}
}

// labelKey identifies a label set: its pairs, sorted.
func labelKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "\x00" + labels[k] + "\x00")
	}
	return b.String()
}

// Describe sends nothing: the families are known only once emitted, so
// the collector is an unchecked one.
func (p *Sink) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series received so far.
func (p *Sink) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range slices.SortedFunc(maps.Values(p.families), func(a, b *family) int { return cmp.Compare(a.name, b.name) }) {
		names := slices.Sorted(maps.Keys(f.labels))
		desc := prometheus.NewDesc(f.name, f.help, names, nil)
		for _, s := range f.series {
			values := make([]string, len(names))
			for i, n := range names {
				values[i] = s.labels[n]
			}
			if !f.histogram {
				ch <- prometheus.MustNewConstMetric(desc, f.kind, s.value, values...)
				continue
			}
			cumulative := make(map[float64]uint64, len(DurationBuckets))
			var n uint64
			for i, le := range DurationBuckets {
				n += s.buckets[i]
				cumulative[le] = n
			}
			ch <- prometheus.MustNewConstHistogram(desc, s.count, s.sum, cumulative, values...)
		}
	}
}
