package testenv

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// RuntimeClients are the Docker and Kubernetes client modules: linked only
// into the worker and reconciler functions (architecture.md), never into
// the API and dispatcher functions, whose cold start and size they would
// weigh on.
var RuntimeClients = []string{"github.com/moby/", "github.com/docker/", "k8s.io/client-go/", "k8s.io/api/"}

// NoDeps fails t if the package in the current directory links any package
// under the forbidden prefixes, in the Lambda build (linux/arm64,
// lambda.norpc) and the host's. mustHave is a package the listing must
// contain, so that a listing of the wrong package cannot pass.
func NoDeps(t *testing.T, mustHave string, forbidden []string) {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, build := range []struct {
		name string
		env  []string
		args []string
	}{
		{"lambda", []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}, []string{"-tags", "lambda.norpc"}},
		{"host", nil, nil},
	} {
		t.Run(build.name, func(t *testing.T) {
			args := append([]string{"list", "-deps"}, build.args...)
			cmd := exec.CommandContext(t.Context(), goBin, append(args, ".")...)
			cmd.Env = append(cmd.Environ(), build.env...)
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps: %v\n%s", err, stderr)
			}
			pkgs := strings.Fields(string(out))
			if len(pkgs) < 50 || !slices.Contains(pkgs, mustHave) {
				t.Fatalf("go list -deps listed %d packages, without %s: not the package meant?", len(pkgs), mustHave)
			}
			for _, p := range pkgs {
				for _, bad := range forbidden {
					if strings.HasPrefix(p+"/", bad) {
						t.Errorf("links %s (%s*); `go mod why %s` shows the path", p, bad, p)
					}
				}
			}
		})
	}
}

// Links fails t unless the package in the current directory links every
// package in want, in the Lambda build (linux/arm64, lambda.norpc).
func Links(t *testing.T, want ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "-tags", "lambda.norpc", ".")
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	pkgs := strings.Fields(string(out))
	for _, w := range want {
		if !slices.Contains(pkgs, w) {
			t.Errorf("does not link %s", w)
		}
	}
}
