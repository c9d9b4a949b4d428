package console

import "testing"

// BenchmarkLoad is the one-time cost of the first console request in a
// process (reading and gzip-compressing every asset): what a cold api
// function pays when its first request is for the console. Requests for the
// API never pay it.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		load()
	}
}
