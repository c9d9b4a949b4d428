package emulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/berth-io/berth/internal/samtemplate"
)

// The Lambda Runtime Interface Emulator, built from its Go module into the
// berth cache directory (keyed by version).
const (
	RIEModule  = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// CacheRoot is where expensive builds are kept between runs:
// $BERTH_CACHE_DIR, else $HOME/.cache/berth.
func CacheRoot() string {
	if d := os.Getenv("BERTH_CACHE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "berth-cache")
	}
	return filepath.Join(home, ".cache", "berth")
}

// goTool is the go command of the toolchain running this program when it
// has one (tests, go run), else the one on PATH.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// RIEBinary returns the emulator's path, building it into the cache the
// first time (in a temporary directory renamed into place, so concurrent or
// interrupted builds never leave half a binary).
func RIEBinary(ctx context.Context) (string, error) {
	root := CacheRoot()
	dir := filepath.Join(root, "rie-"+RIEVersion)
	bin := filepath.Join(dir, "aws-lambda-rie")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".rie-build-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, goTool(), "install", "-trimpath", "-ldflags", "-s -w", RIEModule+"@"+RIEVersion)
	cmd.Dir = tmp // outside any module: `go install mod@version` builds it on its own
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Lambda RIE (go install %s@%s): %w\n%s", RIEModule, RIEVersion, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(bin); statErr != nil { // not someone else's finished build
			return "", fmt.Errorf("installing the Lambda RIE into %s: %w", dir, err)
		}
	}
	return bin, nil
}

// Package is how one function is built: the Go package and its build tags.
type Package struct {
	Dir  string // absolute directory of the main package
	Tags string // -tags value
}

// DefaultTags are the build tags of a Lambda bootstrap when its build
// command names none.
const DefaultTags = "lambda.norpc"

// FunctionPackage finds the Go main package of a template function. A
// CodeUri that is itself a main package is that package. Otherwise, with
// Metadata BuildMethod makefile, the target SAM would call
// (`make build-<LogicalId>` in the CodeUri directory) is asked what it
// runs (`make -n`), and its `go build` line names the package and tags.
func FunctionPackage(ctx context.Context, templateDir string, fn *samtemplate.Function) (Package, error) {
	codeDir := filepath.Join(templateDir, fn.CodeURI)
	if isMainPackage(codeDir) {
		return Package{Dir: codeDir, Tags: DefaultTags}, nil
	}
	method, _ := fn.Metadata["BuildMethod"].(string)
	if !strings.EqualFold(method, "makefile") {
		return Package{}, fmt.Errorf("%s: CodeUri %s is not a Go main package and Metadata.BuildMethod is %q, not makefile", fn.LogicalID, fn.CodeURI, method)
	}
	if ctxPath, ok := fn.Metadata["ContextPath"].(string); ok && ctxPath != "" {
		codeDir = filepath.Join(templateDir, ctxPath)
	}
	target := "build-" + fn.LogicalID
	cmd := exec.CommandContext(ctx, "make", "-n", "--no-print-directory", target, "ARTIFACTS_DIR=/nonexistent/artifacts")
	cmd.Dir = codeDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Package{}, fmt.Errorf("%s: `make -n %s` in %s: %w\n%s", fn.LogicalID, target, codeDir, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		for i := 0; i+1 < len(fields); i++ {
			if !strings.HasSuffix(fields[i], "go") || fields[i+1] != "build" {
				continue
			}
			pkg := Package{Tags: DefaultTags}
			args := fields[i+2:]
			for j := 0; j < len(args); j++ {
				a := strings.Trim(args[j], `"'`)
				switch {
				case a == "-tags" && j+1 < len(args):
					pkg.Tags = strings.Trim(args[j+1], `"'`)
					j++
				case strings.HasPrefix(a, "-tags="):
					pkg.Tags = strings.Trim(strings.TrimPrefix(a, "-tags="), `"'`)
				case a == "-o" || a == "-ldflags" || a == "-gcflags":
					j++
				case strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../"):
					pkg.Dir = filepath.Join(codeDir, a)
				}
			}
			if pkg.Dir != "" && isMainPackage(pkg.Dir) {
				return pkg, nil
			}
		}
	}
	return Package{}, fmt.Errorf("%s: `make -n %s` runs no `go build` of a local main package:\n%s", fn.LogicalID, target, out)
}

// isMainPackage reports whether dir holds Go files of package main.
func isMainPackage(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if s := string(b); strings.HasPrefix(s, "package main\n") || strings.Contains(s, "\npackage main\n") {
			return true
		}
	}
	return false
}

// Builder builds each function package once, for this machine's
// architecture, as Lambda's build does otherwise (same tags; static and
// trimmed, except under the race detector: buildFlags). One Builder may
// serve several emulated stacks, and builds of different packages may run
// at once; callers asking for a package being built wait for that build.
//
// Each bootstrap is also kept between runs under kept (keptDir): a build
// starts from the kept one, and go build links again only when what the
// bootstrap is built from changed (it compares the build ID the file
// carries), so an unchanged function costs no link, the most of a warm
// build.
type Builder struct {
	dir   string
	kept  string // "" keeps nothing
	mu    sync.Mutex
	n     int // builds started: each writes to a directory of its own
	built map[Package]*buildCall
}

// buildCall is one build of a package, done when done is closed.
type buildCall struct {
	done chan struct{}
	path string
	err  error
	// cancelled: the build stopped because its caller's context ended, so
	// a caller still waiting builds the package itself.
	cancelled bool
}

// Build returns the path of pkg's binary, built as a bootstrap is (for this
// machine's architecture, with pkg.Tags and buildFlags): the same build
// and the same keeping for any main package, such as the berth CLI a test
// runs next to a stack.
func (b *Builder) Build(ctx context.Context, pkg Package) (string, error) { return b.build(ctx, pkg) }

func (b *Builder) build(ctx context.Context, pkg Package) (string, error) {
	for {
		b.mu.Lock()
		c, ok := b.built[pkg]
		if !ok {
			break // b.mu held: this caller builds
		}
		b.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if !c.cancelled {
			return c.path, c.err
		}
	}
	c := &buildCall{done: make(chan struct{})}
	if b.built == nil {
		b.built = map[Package]*buildCall{}
	}
	b.built[pkg] = c
	out := filepath.Join(b.dir, fmt.Sprintf("%s-%d", filepath.Base(pkg.Dir), b.n), "bootstrap")
	b.n++
	b.mu.Unlock()

	if c.err = b.goBuild(ctx, pkg, out); c.err != nil {
		c.cancelled = ctx.Err() != nil
		b.mu.Lock()
		delete(b.built, pkg) // a later caller tries again, as before
		b.mu.Unlock()
	} else {
		c.path = out
	}
	close(c.done)
	return c.path, c.err
}

// goBuild builds pkg into out, starting from its kept bootstrap, and keeps
// the result. Keeping is best effort: without it the build is whole.
func (b *Builder) goBuild(ctx context.Context, pkg Package, out string) error {
	kept := b.keptPath(pkg)
	if kept != "" {
		_ = copyFile(kept, out)
	}
	args, env := buildFlags()
	cmd := exec.CommandContext(ctx, goTool(), append(append([]string{"build", "-tags", pkg.Tags}, args...), "-ldflags", "-s -w", "-o", out, ".")...)
	cmd.Dir = pkg.Dir
	cmd.Env = append(os.Environ(), append([]string{"GOOS=linux", "GOARCH=" + runtime.GOARCH}, env...)...)
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg.Dir, err, o)
	}
	if kept != "" {
		// Another run may keep the same package at once: each writes a
		// file of its own and renames it into place.
		tmp := kept + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(filepath.Dir(out))
		if err := copyFile(out, tmp); err == nil {
			_ = os.Rename(tmp, kept)
		}
		_ = os.Remove(tmp) // left only when the copy or the rename failed
	}
	return nil
}

// buildFlags are a bootstrap's build flags and environment beyond its tags:
// Lambda's own (static, trimmed), or, when this program runs under the race
// detector (the test suite), the race detector's with the tests' own
// settings (cgo, paths not trimmed). Built like the test binaries, the
// functions compile no package the suite has not compiled already (a cold
// suite compiled the whole dependency tree a second time for them), and a
// data race in a function shows in the stack's output.
func buildFlags() (args, env []string) {
	if raceDetector {
		return []string{"-race"}, []string{"CGO_ENABLED=1"}
	}
	return []string{"-trimpath"}, []string{"CGO_ENABLED=0"}
}

// keptPath is where pkg's bootstrap is kept between runs ("" without
// keeping): by keptPlace, tags, architecture and build flags.
func (b *Builder) keptPath(pkg Package) string {
	if b.kept == "" {
		return ""
	}
	args, _ := buildFlags()
	sum := sha256.Sum256([]byte(keptPlace(pkg.Dir, raceDetector) + "\x00" + pkg.Tags + "\x00" + runtime.GOARCH + "\x00" + strings.Join(args, " ")))
	dir := filepath.Join(b.kept, filepath.Base(pkg.Dir)+"-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return filepath.Join(dir, "bootstrap")
}

// keptPlace names the package in dir for keeping its bootstrap: its place
// in its module (modulePlace) for a trimmed build, which any checkout of
// the tree links alike; the directory itself for a race build, which is
// untrimmed and so links again in another checkout: two checkouts tested
// in turn (a worktree beside the main one) would otherwise replace each
// other's bootstraps, and each run would link every function again.
func keptPlace(dir string, race bool) string {
	if race {
		return dir
	}
	return modulePlace(dir)
}

// modulePlace names the package in dir by its module's path and its
// directory inside the module, not by the checkout it is in, so that
// another checkout of the tree (a fresh clone in CI, a worktree) starts
// from what an earlier one kept: go build links again wherever the code
// differs (-trimpath keeps the checkout's directory out of the binary and
// its build ID; a race build, untrimmed, links again in another checkout).
// Outside a module, dir itself.
func modulePlace(dir string) string {
	for root := dir; ; {
		if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return dir
			}
			return moduleLine(b) + "/" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return dir
		}
		root = up
	}
}

// moduleLine is the module path a go.mod declares ("" if none).
func moduleLine(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// copyFile copies the file src to dst (made executable).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		_ = w.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return w.Close()
}

// keptDir is where bootstraps are kept between runs: under CacheRoot.
func keptDir() string { return filepath.Join(CacheRoot(), "functions") }

// NewBuilder returns a Builder that writes its bootstraps under dir and
// keeps them between runs under keptDir.
func NewBuilder(dir string) *Builder { return &Builder{dir: dir, kept: keptDir()} }
