package lambdastream_test

import (
	"log/slog"
	"testing"
)

func TestMain(m *testing.M) {
	// Components built without a Logger log to slog.Default: keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	m.Run()
}
