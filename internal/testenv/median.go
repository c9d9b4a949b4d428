package testenv

import (
	"slices"
	"time"
)

// Median returns the middle of ds (the upper middle for an even count)
// without reordering ds: the figure latency tests assert on, since one slow
// sample on a shared machine should not fail them. ds must not be empty.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
