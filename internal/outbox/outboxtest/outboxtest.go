// Package outboxtest holds the test helpers of the outbox's message format,
// shared by the packages that read what the dispatcher sends (outbox itself
// and lambdastream).
package outboxtest

import (
	"testing"

	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
)

// Decode is the outbox message a delivery carries; a body that is not one
// fails the test.
func Decode(t testing.TB, d queue.Delivery) outbox.Message {
	t.Helper()
	m, err := outbox.Decode(d.Body)
	if err != nil {
		t.Fatalf("message body %q: %v", d.Body, err)
	}
	return m
}
