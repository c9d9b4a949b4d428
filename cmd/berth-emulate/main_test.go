package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/testenv"
)

// envRunMain set makes the test binary the command itself: TestServeAndStop
// runs it as berth-emulate without a build and link of its own (a minute of
// the package's time on a loaded 2-core machine), main being the same code.
const envRunMain = "BERTH_EMULATE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestServeAndStop runs the command as `make emulate` does, starting its
// own DynamoDB Local and SQS emulator with the project's scripts: it
// prints "API on http://<EMULATE_ADDR>", answers there, logs one line per
// invocation, and on SIGTERM stops every process it started (the
// services, each RIE and the bootstrap under it) before it exits 0.
func TestServeAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack; skipped with -short")
	}
	dockerHost := testenv.DockerHost(t)
	if _, err := exec.LookPath("java"); err != nil && testenv.InCI() {
		t.Fatal("java is needed for DynamoDB Local")
	}
	bin, err := os.Executable() // this test binary, which runs main (TestMain)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yml")
	scope := "emu-stop-" + strings.ToLower(time.Now().Format("150405.000"))
	scope = strings.ReplaceAll(scope, ".", "")
	if err := os.WriteFile(cfg, []byte("docker:\n  scope: "+scope+"\n  hosts:\n    - {name: local, endpoint: "+dockerHost+", network_mode: none}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The functions are built first, outside any bounded wait: the command
	// builds them again through the same kept bootstraps, which then only
	// link what changed (emulate.Builder).
	if err := emulate.NewBuilder(t.TempDir()).Prebuild(context.Background(), "../../template.yaml", nil); err != nil {
		t.Fatalf("building the stack's functions: %v", err)
	}
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(bin, "--template", "../../template.yaml", "--stack-name", scope)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL") { // its own services, from the scripts
			env = append(env, kv)
		}
	}
	env = append(env, "BERTH_CONFIG="+cfg, "EMULATE_ADDR="+addr, envRunMain+"=1")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			out := logs.String()
			if len(out) > 10000 {
				out = out[len(out)-10000:]
			}
			t.Logf("output:\n%s", out)
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	select {
	case l := <-lines:
		if l != "API on http://"+addr {
			t.Fatalf("first line %q, want %q", l, "API on http://"+addr)
		}
	case <-testenv.BeforeDeadline(t):
		t.Fatal("not ready by the test binary's deadline")
	}
	resp, err := http.Get("http://" + addr + "/api/containers")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK { // no tokens: the local admin
		t.Fatalf("GET /api/containers: %d", resp.StatusCode)
	}

	// The bootstraps the RIEs run, while they run.
	var bootstraps []int
	for _, l := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg string
			PID int
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "function instance started" {
			bootstraps = append(bootstraps, emulate.Descendants(rec.PID)...)
		}
	}
	if len(bootstraps) == 0 {
		t.Error("no bootstrap process under the API function's RIE")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("still running 2 minutes after SIGTERM")
	}

	var pids []int
	invokes := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg      string
			PID      int
			Function string
			Result   string
			Duration float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		switch rec.Msg {
		case "service started", "function instance started":
			if rec.PID > 0 {
				pids = append(pids, rec.PID)
			}
		case "invoke":
			if rec.Function == "" || rec.Result == "" || rec.Duration <= 0 {
				t.Errorf("invocation line without function, result or duration: %s", l)
			}
			invokes++
		}
	}
	if len(pids) < 3 { // DynamoDB Local, the SQS emulator, the API function
		t.Errorf("started PIDs %v: want the two services and at least one RIE", pids)
	}
	if invokes == 0 {
		t.Error("no invocation line")
	}
	for _, pid := range append(pids, bootstraps...) {
		if alive(pid) {
			t.Errorf("PID %d still runs after the emulator stopped", pid)
		}
	}
}

// alive reports whether a process runs: it exists and is not a zombie
// (what the scripts started is reparented to PID 1, which may be slow to
// reap it here).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
