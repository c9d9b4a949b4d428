package worker

import (
	"math/rand/v2"
	"time"
)

// ExponentialBackoff doubles the delay from base with each attempt up to
// maxDelay, with ±20% jitter so that retries of a burst do not land together.
// The queue carries the delay (SQS visibility), so no process sleeps on it.
func ExponentialBackoff(base, maxDelay time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		if attempt < 1 {
			attempt = 1
		}
		d := base
		for i := 1; i < attempt && d < maxDelay; i++ {
			d *= 2
		}
		d = min(d, maxDelay)
		jitter := time.Duration(float64(d) * 0.2 * (2*rand.Float64() - 1))
		return max(d+jitter, 0)
	}
}
