package emulate_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/testenv"
)

// BenchmarkCreateToRunning measures, side by side in one run, create →
// running through the emulated AWS stack (API function → DynamoDB →
// stream poller → dispatcher → SQS → create worker → Docker, every hop a
// real process) and through `berth serve` on the same Docker engine, and
// reports the emulator's latency as a ratio of serve's. It also reports
// each function's cold start under the RIE (process start → first answer,
// init included), from the emulator's invocation lines.
//
//	make bench BENCH=CreateToRunning PKGS=./internal/emulate BENCHTIME=10x
func BenchmarkCreateToRunning(b *testing.B) {
	em := start(b, setup{scheduleEvery: 5 * time.Second}) // the reconciler runs (and is measured) too
	serve := startServe(b)
	var emLat, serveLat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for _, side := range []struct {
			st  *stack
			lat *[]time.Duration
		}{{em, &emLat}, {serve, &serveLat}} {
			t0 := time.Now()
			id := side.st.create(aliceToken, "busybox", "")
			side.st.wait(aliceToken, id, "running", time.Minute)
			*side.lat = append(*side.lat, time.Since(t0))
			if r := side.st.do(http.MethodDelete, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusAccepted {
				b.Fatalf("delete %d: %d %s", i, r.status, r.body)
			}
		}
	}
	b.StopTimer()
	slices.Sort(emLat)
	slices.Sort(serveLat)
	e, s := emLat[len(emLat)/2], serveLat[len(serveLat)/2]
	b.ReportMetric(float64(e.Microseconds())/1000, "emulate-p50-ms")
	b.ReportMetric(float64(s.Microseconds())/1000, "serve-p50-ms")
	b.ReportMetric(float64(e)/float64(s), "emulate/serve")
	for fn, d := range coldStarts(em.logs.String()) {
		b.ReportMetric(d, fn+"-cold-ms")
	}
}

// coldStarts returns each function's first cold start (ms): the RIE
// process's start until it listens, plus the runtime's init as the RIE
// reports it (INIT REPORT, phase init: the bootstrap's start and its setup
// before the first event).
func coldStarts(logs string) map[string]float64 {
	start := map[string]float64{}
	out := map[string]float64{}
	for _, l := range strings.Split(logs, "\n") {
		var rec struct {
			Msg      string
			Function string
			Instance int
			Start    float64 `json:"start_ms"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "function instance started" && rec.Instance == 1 {
			start[rec.Function] = rec.Start
			continue
		}
		// [Fn#1] … INIT REPORT(durationMs: 23.450000)
		fn, rest, ok := strings.Cut(strings.TrimPrefix(l, "["), "#1] ")
		if !ok || !strings.Contains(rest, "INIT REPORT(durationMs: ") {
			continue
		}
		if _, seen := out[fn]; seen {
			continue
		}
		_, v, _ := strings.Cut(rest, "durationMs: ")
		ms, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), ")"), 64)
		if s, ok := start[fn]; ok && err == nil {
			out[fn] = s + ms
		}
	}
	return out
}

// startServe runs `berth serve` on the test engine with the tests' tokens.
func startServe(b *testing.B) *stack {
	b.Helper()
	dockerHost := testenv.DockerHost(b)
	dir := b.TempDir()
	builder(b)
	bin, err := buildMain("../../cmd/berth")
	if err != nil {
		b.Fatalf("build berth: %v", err)
	}
	st := &stack{t: b, name: "serve", logs: &testenv.SyncBuffer{}}
	cfg := "docker:\n  scope: bench-serve\n  hosts:\n    - {name: local, endpoint: " + dockerHost + ", network_mode: none}\n" +
		"auth:\n  tokens:\n    " + adminToken + ": {user: admin, admin: true}\n    " + aliceToken + ": {user: alice}\n"
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	addr := testenv.FreeAddr(b)
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--addr", addr, "--data", filepath.Join(dir, "data"))
	cmd.Stdout, cmd.Stderr = st.logs, st.logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("berth serve did not listen:\n%s", st.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st.url = "http://" + addr
	st.putTemplate("busybox", []string{"sh", "-c", "exec sleep 3600"})
	return st
}
