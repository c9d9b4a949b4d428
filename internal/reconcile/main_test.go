package reconcile_test

import (
	"os"
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// Passes over both stores and the engine wait far more than they compute.
func TestMain(m *testing.M) { os.Exit(testenv.MainWaiting(m)) }
