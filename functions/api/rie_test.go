package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// coldStarts is how many times the emulator is started to measure a cold
// start; warmInvokes how many warm invocations are timed.
const (
	coldStarts  = 3
	warmInvokes = 40
)

// TestRIE runs the real bootstrap binary under the Runtime Interface
// Emulator against DynamoDB Local and sends it the events/ fixtures, as
// API Gateway would: the same scenario and statuses as TestFixtures.
func TestRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the function binary; skipped with -short")
	}
	endpoint := testenv.DynamoDBEndpoint(t)
	rie := rieBinary(t)
	bootstrap := buildBootstrap(t)

	client := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("rie%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(context.Background(), client, prefix); err != nil {
		t.Fatalf("creating tables: %v", err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
	s := dynamostore.New(client, dynamostore.Options{TablePrefix: prefix})

	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
		"AWS_ACCESS_KEY_ID=berthtest",
		"AWS_SECRET_ACCESS_KEY=berthtest",
		"AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_NAME=berth-api",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=30",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"BERTH_STORE_TABLE_PREFIX=" + prefix,
	}

	// Cold starts: emulator process start → first answer, on an event that
	// reads the store (the first DynamoDB call opens its connection).
	var cold, firstInvoke []time.Duration
	var em *emulator
	for i := range coldStarts {
		if em != nil {
			em.stop(t)
		}
		start := time.Now()
		em = startRIE(t, rie, bootstrap, env)
		ready := time.Now()
		resp := em.invoke(t, fixture(t, "list", ""))
		cold = append(cold, time.Since(start))
		firstInvoke = append(firstInvoke, time.Since(ready))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("cold start %d: status %d: %s\n%s", i, resp.StatusCode, resp.Body, em.output())
		}
	}

	id := runScenario(t, s, func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return em.invoke(t, b)
	})
	if t.Failed() {
		t.Logf("emulator and function output:\n%s", em.output())
		return
	}

	// Warm invocations: a GET of the scenario's instance (one GetItem).
	get := fixture(t, "get", id)
	warm := make([]time.Duration, 0, warmInvokes)
	for range warmInvokes {
		t0 := time.Now()
		resp := em.invoke(t, get)
		warm = append(warm, time.Since(t0))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("warm get: %d %s", resp.StatusCode, resp.Body)
		}
	}
	slices.Sort(cold)
	slices.Sort(firstInvoke)
	slices.Sort(warm)
	t.Logf("cold start (emulator start → first answer, %d runs): min %v, p50 %v, max %v; first invoke after the port opened: p50 %v",
		len(cold), cold[0].Round(time.Millisecond), pct(cold, 50).Round(time.Millisecond), cold[len(cold)-1].Round(time.Millisecond),
		pct(firstInvoke, 50).Round(time.Millisecond))
	t.Logf("warm invoke (GET instance, %d runs): p50 %v, p90 %v, max %v",
		len(warm), pct(warm, 50).Round(10*time.Microsecond), pct(warm, 90).Round(10*time.Microsecond), warm[len(warm)-1].Round(10*time.Microsecond))
}

// pct is the p-th percentile of sorted durations (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// rieBinary returns the emulator, built once into the berth cache
// (internal/emulate pins its version).
func rieBinary(t *testing.T) string {
	t.Helper()
	bin, err := emulate.RIEBinary(context.Background())
	if err != nil {
		testenv.Missing(t, "the Lambda Runtime Interface Emulator", err.Error())
	}
	return bin
}

// buildBootstrap builds ./ (functions/api) as Lambda builds it, for the
// host's architecture.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the bootstrap: %v\n%s", err, b)
	}
	return out
}

// emulator is one running aws-lambda-rie with the bootstrap.
type emulator struct {
	cmd    *exec.Cmd
	url    string
	out    *testenv.SyncBuffer
	done   chan struct{}
	client *http.Client
}

// startRIE starts the emulator on free loopback ports and waits until it
// accepts connections (it starts the bootstrap on the first invoke).
func startRIE(t *testing.T, rie, bootstrap string, env []string) *emulator {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port, apiPort := freePort(t), freePort(t)
		out := &testenv.SyncBuffer{}
		cmd := exec.Command(rie,
			"--runtime-interface-emulator-address", "127.0.0.1:"+port,
			"--runtime-api-address", "127.0.0.1:"+apiPort,
			bootstrap)
		cmd.Dir = filepath.Dir(bootstrap)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = out, out
		// Its own process group, so that stop ends the bootstrap it started too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting the emulator: %v", err)
		}
		em := &emulator{cmd: cmd, url: "http://127.0.0.1:" + port + "/2015-03-31/functions/function/invocations",
			out: out, done: make(chan struct{}), client: &http.Client{Timeout: 35 * time.Second}}
		go func() { _ = cmd.Wait(); close(em.done) }()
		t.Cleanup(func() { em.stop(t) })
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-em.done:
				deadline = time.Time{} // exited (port taken?): try again
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 100*time.Millisecond); err == nil {
				_ = c.Close()
				return em
			}
			time.Sleep(5 * time.Millisecond)
		}
		em.stop(t)
		if attempt == 3 {
			t.Fatalf("the emulator did not listen on 127.0.0.1:%s:\n%s", port, out.String())
		}
	}
}

// invoke sends one event and decodes API Gateway's response shape.
func (em *emulator) invoke(t *testing.T, event []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := em.client.Post(em.url, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, em.output())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke: emulator answered %d: %s\n%s", resp.StatusCode, body, em.output())
	}
	var out events.APIGatewayV2HTTPResponse
	var fnErr struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}
	if json.Unmarshal(body, &fnErr) == nil && fnErr.ErrorType != "" {
		t.Fatalf("the function failed: %s: %s\n%s", fnErr.ErrorType, fnErr.ErrorMessage, em.output())
	}
	if err := json.Unmarshal(body, &out); err != nil || out.StatusCode == 0 {
		t.Fatalf("not an API Gateway response (%v): %s", err, body)
	}
	return out
}

// stop ends the emulator and the bootstrap (its process group).
func (em *emulator) stop(t *testing.T) {
	select {
	case <-em.done:
		return
	default:
	}
	pgid := em.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-em.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-em.done
	}
}

// output is the tail of what the emulator and the function printed.
func (em *emulator) output() string {
	s := em.out.String()
	if len(s) > 8000 {
		s = "…" + s[len(s)-8000:]
	}
	return s
}

func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(testenv.FreeAddr(t))
	return port
}
