package lambdastream_test

import (
	"log/slog"
	"testing"

	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
)

func decode(t testing.TB, d queue.Delivery) outbox.Message {
	t.Helper()
	m, err := outbox.Decode(d.Body)
	if err != nil {
		t.Fatalf("message body %q: %v", d.Body, err)
	}
	return m
}

func TestMain(m *testing.M) {
	// Components built without a Logger log to slog.Default: keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	m.Run()
}
