package main

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/metrics/promsink"
	"github.com/berth-io/berth/internal/monitor"
)

// The gauges GET /metrics reads from berth serve's parts at each scrape:
// what the dashboard on AWS takes from SQS and Lambda (queue depths, dead
// letters, create invocations in progress), here held in the process.
var (
	queueMessagesDesc = prometheus.NewDesc("berth_queue_messages",
		"Messages an in-process queue holds, by state: visible (waiting), in_flight (being worked on), delayed (retries waiting out their delay).",
		[]string{"queue", "state"}, nil)
	queueDeadLettersDesc = prometheus.NewDesc("berth_queue_dead_letters",
		"Messages an in-process queue gave up on after container.max_attempts receives (its dead-letter queue).",
		[]string{"queue"}, nil)
	createSlotsInUseDesc = prometheus.NewDesc("berth_create_slots_in_use",
		"Creates being carried out now (of container.create_queue_max_concurrency).", nil, nil)
	createSlotsDesc = prometheus.NewDesc("berth_create_slots",
		"container.create_queue_max_concurrency: creates carried out at once at most.", nil, nil)
	admissionInUseDesc = prometheus.NewDesc("berth_admission_in_use",
		"Creates admitted and not finished (the store's admission count, of container.create_queue_max_pending).", nil, nil)
	admissionLimitDesc = prometheus.NewDesc("berth_admission_limit",
		"container.create_queue_max_pending: creates admitted and not finished at most (429 beyond).", nil, nil)
)

// scrapeTimeout bounds the store read of a scrape.
const scrapeTimeout = 5 * time.Second

// serveCollector is the gauges above, read from s at each scrape.
type serveCollector struct{ s *server }

var _ prometheus.Collector = serveCollector{}

// Describe sends the gauges' descriptions.
func (c serveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueMessagesDesc, queueDeadLettersDesc, createSlotsInUseDesc, createSlotsDesc,
		admissionInUseDesc, admissionLimitDesc} {
		ch <- d
	}
}

// Collect reads them. A store that does not answer leaves the admission
// gauge out of this scrape (/healthz says why).
func (c serveCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for name, q := range c.s.queues {
		st := q.Stats()
		gauge(queueMessagesDesc, st.Visible, string(name), "visible")
		gauge(queueMessagesDesc, st.InFlight, string(name), "in_flight")
		gauge(queueMessagesDesc, st.Delayed, string(name), "delayed")
		gauge(queueDeadLettersDesc, q.DeadLetter().Stats().Total(), string(name))
	}
	gauge(createSlotsInUseDesc, c.s.slots.InUse())
	gauge(createSlotsDesc, c.s.cfg.Container.CreateQueueMaxConcurrency)
	gauge(admissionLimitDesc, c.s.cfg.Container.CreateQueueMaxPending)
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if n, err := c.s.store.AdmissionCount(ctx); err == nil {
		gauge(admissionInUseDesc, n)
	}
}

// metricsEndpoint serves GET /metrics: what the emitter's sink received
// and the gauges above.
func (s *server) metricsEndpoint(sink *promsink.Sink) (http.Handler, error) {
	return promsink.Handler(sink, serveCollector{s: s})
}

// countedLoop is a runtime's state loop that counts the events it is given
// (WatcherEvents, as the watcher function counts them on AWS): a state
// loop whose count stops growing while containers change has stopped.
type countedLoop struct {
	loop    monitor.StateLoop
	metrics *metrics.Emitter
	kind    string
}

var _ monitor.StateLoop = countedLoop{}

// OnEvent counts ob and hands it on.
func (c countedLoop) OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error) {
	c.metrics.Count("WatcherEvents", 1, "Kind", c.kind, "Node", ob.NodeName)
	return c.loop.OnEvent(ctx, ob)
}
