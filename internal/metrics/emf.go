// Package metrics writes CloudWatch Embedded Metric Format (EMF) lines: one
// JSON object per line that CloudWatch Logs turns into metrics when berth
// runs in Lambda, and that stay readable JSON logs when it runs locally.
// An Emitter also feeds its Sinks every value it emits: `berth serve` keeps
// them in a Prometheus registry (internal/metrics/promsink) that GET /metrics serves, so
// the names and dimensions are the EMF ones, written once in the code.
package metrics

import (
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of berth's metrics.
const Namespace = "berth"

// Units EMF accepts that berth uses.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	Seconds      = "Seconds"
)

// Emitter writes EMF lines to one writer. A nil *Emitter discards metrics,
// so components may be built without one.
type Emitter struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	base  map[string]string
	sinks []Sink
}

// New returns an Emitter writing to w (os.Stdout if nil), adding the base
// dimensions (e.g. Function) to every metric, and handing every value to
// sinks too (without the base dimensions: those say which process emitted,
// which a scraper knows already). With w io.Discard no EMF line is encoded.
func New(w io.Writer, base map[string]string, sinks ...Sink) *Emitter {
	if w == nil {
		w = os.Stdout
	}
	return &Emitter{w: w, now: time.Now, base: base, sinks: sinks}
}

// Count emits a counter; dims are name/value pairs.
func (e *Emitter) Count(name string, v float64, dims ...string) { e.Emit(name, v, Count, dims...) }

// Duration emits a duration in milliseconds.
func (e *Emitter) Duration(name string, d time.Duration, dims ...string) {
	e.Emit(name, float64(d.Microseconds())/1000, Milliseconds, dims...)
}

// Emit writes one metric value with its unit and dimensions.
func (e *Emitter) Emit(name string, v float64, unit string, dims ...string) {
	if e == nil {
		return
	}
	for _, s := range e.sinks {
		s.Observe(name, v, unit, dims)
	}
	if e.w == io.Discard {
		return
	}
	doc := map[string]any{}
	var keys []string
	for k, val := range e.base {
		doc[k] = val
		keys = append(keys, k)
	}
	for i := 0; i+1 < len(dims); i += 2 {
		doc[dims[i]] = dims[i+1]
		keys = append(keys, dims[i])
	}
	doc[name] = v
	if keys == nil {
		keys = []string{}
	}
	doc["_aws"] = map[string]any{
		"Timestamp": e.now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  Namespace,
			"Dimensions": [][]string{keys},
			"Metrics":    []any{map[string]string{"Name": name, "Unit": unit}},
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(line, '\n'))
}
