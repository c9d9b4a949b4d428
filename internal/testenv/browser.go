package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// EnvChromium overrides where the browser tests find Chromium.
const EnvChromium = "BERTH_TEST_CHROMIUM"

// Chromium returns the path of a Chromium for the browser tests:
// $BERTH_TEST_CHROMIUM, else Debian's chromium package on PATH (.ci/run
// installs it). Missing: a skip locally, a failure in CI.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		Missing(t, "Chromium", "no chromium on PATH (apt-get install chromium)")
	}
	return p
}
