package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/testenv"
)

// TestRunLocalSetUp: `make run`'s set-up (scripts/run-local.sh --check)
// with the engine already up finds it on /var/run/docker.sock, finds or
// builds the sample image, says what it did and exits 0 without serving.
// (Before, the script had no set-up of its own: it only stopped when no
// engine answered.)
func TestRunLocalSetUp(t *testing.T) {
	const sock = "unix:///var/run/docker.sock"
	if host := testenv.DockerHost(t); host != sock {
		t.Skipf("the test engine is %s; make run uses %s only", host, sock)
	}
	ctx := testenv.Context(t, 5*time.Minute)
	out, err := exec.CommandContext(ctx, "bash", "../../scripts/run-local.sh", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("run-local.sh --check: %v\n%s", err, out)
	}
	for _, want := range []string{
		"make run: using the Docker engine on " + sock,
		"make run: the sample image berth-test/busybox:1 is on the engine",
		"make run: set-up done",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("run-local.sh --check did not say %q:\n%s", want, out)
		}
	}
}
