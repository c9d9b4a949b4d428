package testenv

import (
	"flag"
	"testing"
)

// TestParallel: Parallel sets -test.parallel, unless the command line gave
// one, which it keeps.
func TestParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.parallel", before) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	Parallel(7)
	want := "7"
	if given {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-test.parallel = %s after Parallel(7), want %s (given on the command line: %v)", got, want, given)
	}
}
