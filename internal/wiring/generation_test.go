package wiring

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGeneration: the generation changes with the code and with any BERTH_*
// variable, and with nothing else (the order of the environment, other
// variables).
func TestGeneration(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bootstrap")
	write := func(code string) {
		if err := os.WriteFile(exe, []byte(code), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("code v1")
	base := []string{"BERTH_CONFIG_PARAMETER=berth-config:3", "BERTH_STORE_TABLE_PREFIX=berth-", "AWS_REGION=eu-west-1"}
	gen := func(environ []string) string {
		t.Helper()
		g, err := generationOf(exe, environ)
		if err != nil || len(g) != 32 {
			t.Fatalf("generationOf: %q %v", g, err)
		}
		return g
	}
	first := gen(base)
	for _, tc := range []struct {
		name    string
		environ []string
		code    string
		same    bool
	}{
		{"same deployment", base, "code v1", true},
		{"other order", []string{base[2], base[1], base[0]}, "code v1", true},
		{"a non-BERTH variable", append(append([]string{}, base...), "AWS_LAMBDA_LOG_STREAM_NAME=x"), "code v1", true},
		{"new configuration version", []string{"BERTH_CONFIG_PARAMETER=berth-config:4", base[1], base[2]}, "code v1", false},
		{"a BERTH variable added", append(append([]string{}, base...), "BERTH_CONTAINER_RECOVER_RUNNING_DAG_ON_START=false"), "code v1", false},
		{"new code", base, "code v2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.code)
			if got := gen(tc.environ); (got == first) != tc.same {
				t.Fatalf("generation %s vs %s: same=%v, want %v", got, first, got == first, tc.same)
			}
		})
	}
	if _, err := Generation(base); err != nil {
		t.Fatalf("Generation of the test binary: %v", err)
	}
}
