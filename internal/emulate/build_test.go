package emulate

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestBuilderSharesBuilds: callers asking at once for one package get one
// build, and a caller whose context has ended does not fail the others
// waiting for the same package.
func TestBuilderSharesBuilds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a function; skipped with -short")
	}
	dir, err := filepath.Abs("testdata/sleeper")
	if err != nil {
		t.Fatal(err)
	}
	pkg := Package{Dir: dir, Tags: DefaultTags}
	out := t.TempDir()
	b := NewBuilder(out)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	const live = 3
	paths := make([]string, live)
	errs := make([]error, live)
	var wg sync.WaitGroup
	var goneErr error
	wg.Go(func() { _, goneErr = b.build(gone, pkg) })
	for i := range live {
		wg.Go(func() { paths[i], errs[i] = b.build(t.Context(), pkg) })
	}
	wg.Wait()
	if goneErr == nil {
		t.Error("a caller whose context had ended got a build")
	}
	for i := range live {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if paths[i] != paths[0] {
			t.Errorf("caller %d got %s, caller 0 %s: want one build", i, paths[i], paths[0])
		}
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Fatalf("the bootstrap: %v", err)
	}
	// Asked again, the package is not built again.
	again, err := b.build(t.Context(), pkg)
	if err != nil || again != paths[0] {
		t.Errorf("asked again: %s, %v; want %s", again, err, paths[0])
	}
}
