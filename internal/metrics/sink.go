package metrics

// Sink receives every value an Emitter emits, as Emit got it: the metric's
// name, its value, its unit (Count, Milliseconds, Seconds) and its
// dimensions as name/value pairs (the Emitter's base ones left out).
// Observe is called on the emitting goroutine, from many at once: it must
// be safe for concurrent use and must not block.
type Sink interface {
	Observe(name string, v float64, unit string, dims []string)
}
