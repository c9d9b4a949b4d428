package testenv

import (
	"testing"
	"time"
)

// DeadlineMargin is how long before the test binary's own deadline
// BeforeDeadline fires: time enough for a test that gives up then to stop
// what it started and print why. Defaults to a minute.
const DeadlineMargin = time.Minute

// BeforeDeadline is a channel that fires DeadlineMargin before the test
// binary's deadline (go test -timeout), or never without one. It bounds a
// wait whose length depends on the machine rather than on what the test
// checks (a build, a cold start-up): no fixed wall-clock limit tighter than
// the suite's own, yet a test that waits in vain still fails with its
// own message instead of the binary's panic at the deadline. A benchmark
// (no deadline of its own) waits without a bound.
func BeforeDeadline(t testing.TB) <-chan time.Time {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return nil
	}
	at, has := d.Deadline()
	if !has {
		return nil
	}
	return time.After(max(time.Until(at.Add(-DeadlineMargin)), 0))
}
