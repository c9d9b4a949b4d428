package worker_test

import (
	"os"
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// The worker's tests spend their time waiting on queues, stores and the
// engine, several at once.
func TestMain(m *testing.M) { os.Exit(testenv.MainWaiting(m)) }
