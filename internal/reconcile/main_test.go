package reconcile_test

import (
	"os"
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// TestMain runs more of the package's parallel tests at once than go
// test's default: they wait on the stores, the queues and the engine
// (testenv.Parallel).
func TestMain(m *testing.M) {
	testenv.Parallel(testenv.WaitingParallel)
	os.Exit(m.Run())
}
