package emulate

import (
	"bytes"
	"context"
	"debug/buildinfo"
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
	pkg := sleeperPackage(t)
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

// TestBuilderBuildsLikeTheSuite: under the race detector a bootstrap is
// built with it and untrimmed, as the test binaries are, so that its
// packages are the ones the suite compiled; otherwise as Lambda's build
// (static, trimmed). The binary's own build settings say which.
func TestBuilderBuildsLikeTheSuite(t *testing.T) {
	t.Parallel()
	path, err := NewBuilder(t.TempDir()).build(t.Context(), sleeperPackage(t))
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"-race": "false", "-trimpath": "true", "CGO_ENABLED": "0", "-tags": DefaultTags}
	if raceDetector {
		want = map[string]string{"-race": "true", "-trimpath": "false", "CGO_ENABLED": "1", "-tags": DefaultTags}
	}
	got := map[string]string{"-race": "false", "-trimpath": "false"} // absent when false
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("build setting %s = %q, want %q (race detector: %v)", k, got[k], v, raceDetector)
		}
	}
}

// TestBuilderKeepsBootstraps: a bootstrap is kept between Builders (runs),
// and a later build starts from it: it is used as it is while it is what
// go build would make (no link), and rebuilt when it is not.
func TestBuilderKeepsBootstraps(t *testing.T) {
	t.Parallel()
	pkg := sleeperPackage(t)
	kept := t.TempDir()
	build := func() []byte {
		t.Helper()
		path, err := (&Builder{dir: t.TempDir(), kept: kept}).build(t.Context(), pkg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if k, err := os.ReadFile((&Builder{kept: kept}).keptPath(pkg)); err != nil || !bytes.Equal(k, b) {
			t.Fatalf("the kept bootstrap (%v) is not the one built", err)
		}
		return b
	}
	keptPath := (&Builder{kept: kept}).keptPath(pkg)
	first := build()

	// Bytes after the end of the file change nothing go build reads (the
	// build ID is near its start): they show which file a build gave.
	marker := []byte("kept by TestBuilderKeepsBootstraps")
	if err := os.WriteFile(keptPath, append(first, marker...), 0o755); err != nil {
		t.Fatal(err)
	}
	if again := build(); !bytes.HasSuffix(again, marker) {
		t.Error("a build of an unchanged package did not start from its kept bootstrap")
	}

	// Another program in its place (this test binary: another build ID)
	// is not what go build would make: it is rebuilt.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keptPath, append(other, marker...), 0o755); err != nil {
		t.Fatal(err)
	}
	if rebuilt := build(); bytes.HasSuffix(rebuilt, marker) || !bytes.Equal(rebuilt, first) {
		t.Errorf("a kept bootstrap of another program was used (%d bytes; the package's is %d)", len(rebuilt), len(first))
	}
}

// TestModulePlace: a package is named by its module and its place in it,
// the same from two checkouts of the tree.
func TestModulePlace(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	for _, root := range []string{a, b} {
		if err := os.MkdirAll(filepath.Join(root, "functions", "worker"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("// berth\nmodule example.com/berth\n\ngo 1.26\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, other := modulePlace(filepath.Join(a, "functions", "worker")), modulePlace(filepath.Join(b, "functions", "worker"))
	if got != "example.com/berth/functions/worker" || other != got {
		t.Errorf("modulePlace: %q and %q, want example.com/berth/functions/worker for both", got, other)
	}
	if got := modulePlace(a); got != "example.com/berth/." {
		t.Errorf("modulePlace of the module's root: %q", got)
	}
	wa, wb := filepath.Join(a, "functions", "worker"), filepath.Join(b, "functions", "worker")
	if keptPlace(wa, false) != keptPlace(wb, false) {
		t.Errorf("trimmed builds of two checkouts are kept apart: %q, %q", keptPlace(wa, false), keptPlace(wb, false))
	}
	if keptPlace(wa, true) == keptPlace(wb, true) {
		t.Errorf("race builds of two checkouts are kept as one: %q", keptPlace(wa, true))
	}
}

// sleeperPackage is testdata/sleeper as a function package; tests that
// build it skip with -short.
func sleeperPackage(t *testing.T) Package {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a function; skipped with -short")
	}
	dir, err := filepath.Abs("testdata/sleeper")
	if err != nil {
		t.Fatal(err)
	}
	return Package{Dir: dir, Tags: DefaultTags}
}
