// Package startstop gives berth's background loops one life cycle, on the
// model of riverqueue/river's start/stop services: a Service is started,
// signals that it runs (Started), is stopped by its Stop or by the end of
// the context it was started with, and signals that it has returned
// (Stopped); a loop that works in passes also signals each pass (Loop's
// NextPass), so that tests wait on signals rather than on time. A Group
// starts named services in stages and stops them in the reverse order,
// which is how a process states its shutdown order in one place.
package startstop
