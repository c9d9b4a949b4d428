package testenv

import (
	"flag"
	"strconv"
	"testing"
)

// WaitingParallel is how many of a package's parallel tests run at once
// where the package asks for it (Parallel): tests that wait on a store, a
// queue or an engine, not on the CPU.
const WaitingParallel = 6

// Parallel sets the package's -test.parallel to n unless the command line
// gave one. Call it from TestMain before m.Run. go test's default is
// GOMAXPROCS (2 on the project's machines), right for tests that compute;
// a package whose tests mostly wait (its parallel leaves sum to twice its
// wall time at 2) leaves the cores idle at it.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// MainWaiting runs a package's tests with WaitingParallel of its parallel
// tests at once (Parallel), for a package whose tests wait rather than
// compute: func TestMain(m *testing.M) { os.Exit(testenv.MainWaiting(m)) }.
func MainWaiting(m *testing.M) int {
	Parallel(WaitingParallel)
	return m.Run()
}
