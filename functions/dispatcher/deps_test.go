package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// forbiddenDeps are the runtime clients: linked only into the worker and
// reconciler (architecture.md), never into the dispatcher function, whose cold
// start and size they would weigh on.
var forbiddenDeps = []string{"github.com/moby/", "github.com/docker/", "k8s.io/client-go/", "k8s.io/api/"}

// TestNoRuntimeClients fails if the dispatcher function links a Docker or
// Kubernetes client, in the Lambda build (linux, lambda.norpc) and the
// host's.
func TestNoRuntimeClients(t *testing.T) {
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
			cmd := exec.Command(goBin, append(args, ".")...)
			cmd.Env = append(cmd.Environ(), build.env...)
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps: %v\n%s", err, stderr)
			}
			pkgs := strings.Fields(string(out))
			if len(pkgs) < 50 || !contains(pkgs, "github.com/berth-io/berth/internal/outbox") {
				t.Fatalf("go list -deps listed %d packages, without internal/outbox: not the dispatcher function?", len(pkgs))
			}
			for _, p := range pkgs {
				for _, bad := range forbiddenDeps {
					if strings.HasPrefix(p+"/", bad) {
						t.Errorf("functions/dispatcher links %s (%s*): runtime clients belong in the worker and reconciler only; `go mod why %s` shows the path", p, bad, p)
					}
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
