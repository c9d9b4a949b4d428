package promsink

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves s and the collectors in Prometheus's text exposition
// format, with the Go runtime's and the process's own metrics (go_*,
// process_*). It answers text whatever the request's Accept asks for (a
// Prometheus server reads it), so that GET /metrics has one documented
// body. A registry that cannot be gathered answers 500.
func Handler(s *Sink, cs ...prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	all := append([]prometheus.Collector{s, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}, cs...)
	for _, c := range all {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Set("Accept", "text/plain")
		h.ServeHTTP(w, r)
	}), nil
}
