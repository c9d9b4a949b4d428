package emulate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Result is how an invocation ended.
type Result string

// Results, as the invocation log line names them.
const (
	ResultOK = Result("ok")
	// ResultError: the handler returned an error (Lambda's function error).
	ResultError = Result("error")
	// ResultTimeout: the function ran out of its timeout.
	ResultTimeout = Result("timeout")
	// ResultCrash: the runtime died (panic, killed) or did not answer.
	ResultCrash = Result("crash")
)

// Invocation is one invoke's outcome.
type Invocation struct {
	Result   Result
	Payload  []byte // the function's response (ResultOK)
	Error    string // errorType: errorMessage, or why it crashed
	Duration time.Duration
	Cold     bool
}

// Function runs one template function under the Lambda RIE: up to
// Concurrency instances, each an RIE process serving one invocation at a
// time, started on demand (a cold start) and kept warm.
type Function struct {
	ID          string
	Concurrency int
	Timeout     time.Duration

	rie, bootstrap string
	env            []string
	log            *slog.Logger
	output         io.Writer

	slots chan struct{}
	mu    sync.Mutex
	idle  []*instance
	all   []*instance
	n     int
	// OnStart, if set, is told of every instance started (tests kill them).
	onStart func(id string, pid int)
}

// instance is one running aws-lambda-rie with its bootstrap.
type instance struct {
	n    int
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

func newFunction(id string, concurrency int, timeout time.Duration, rie, bootstrap string, env []string, log *slog.Logger, output io.Writer) *Function {
	return &Function{ID: id, Concurrency: concurrency, Timeout: timeout, rie: rie, bootstrap: bootstrap, env: env,
		log: log, output: output, slots: make(chan struct{}, concurrency)}
}

// Acquire takes one of the function's concurrency slots, waiting until one
// is free (Lambda would throttle; pollers wait as an event source mapping
// does). Release gives it back.
func (f *Function) Acquire(ctx context.Context) error {
	select {
	case f.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes a slot if one is free.
func (f *Function) TryAcquire() bool {
	select {
	case f.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release gives back a slot taken with Acquire.
func (f *Function) Release() { <-f.slots }

// Invoke runs one event on a free instance and logs one line: function,
// duration, result. The caller holds a slot (Acquire).
func (f *Function) Invoke(ctx context.Context, payload []byte) Invocation {
	t0 := time.Now()
	inst, cold, err := f.take(ctx)
	var inv Invocation
	if err != nil {
		inv = Invocation{Result: ResultCrash, Error: err.Error()}
	} else {
		inv = f.invoke(ctx, inst, payload)
		inv.Cold = cold
	}
	inv.Duration = time.Since(t0)
	attrs := []any{"function", f.ID, "duration_ms", float64(inv.Duration.Microseconds()) / 1000, "result", string(inv.Result), "cold", inv.Cold}
	if inst != nil {
		attrs = append(attrs, "instance", inst.n)
	}
	if inv.Error != "" {
		attrs = append(attrs, "error", inv.Error)
	}
	f.log.Info("invoke", attrs...)
	return inv
}

// call is Invoke holding a slot for the invocation.
func (f *Function) call(ctx context.Context, payload []byte) Invocation {
	if err := f.Acquire(ctx); err != nil {
		return Invocation{Result: ResultCrash, Error: err.Error()}
	}
	defer f.Release()
	return f.Invoke(ctx, payload)
}

// take returns an idle live instance, or starts one.
func (f *Function) take(ctx context.Context) (*instance, bool, error) {
	f.mu.Lock()
	for len(f.idle) > 0 {
		inst := f.idle[len(f.idle)-1]
		f.idle = f.idle[:len(f.idle)-1]
		if !inst.exited() {
			f.mu.Unlock()
			return inst, false, nil
		}
	}
	f.n++
	n := f.n
	f.mu.Unlock()
	inst, err := f.start(ctx, n)
	return inst, true, err
}

func (f *Function) put(inst *instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idle = append(f.idle, inst)
}

func (inst *instance) exited() bool {
	select {
	case <-inst.done:
		return true
	default:
		return false
	}
}

// start runs a new RIE on free loopback ports and waits until it listens
// (it starts the bootstrap, the function's init, on the first invoke).
func (f *Function) start(ctx context.Context, n int) (*instance, error) {
	var lastErr error
	t0 := time.Now()
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		apiPort, err := freePort()
		if err != nil {
			return nil, err
		}
		// Not CommandContext: the instance outlives the request that started it
		// and is ended by Stop, which also ends the bootstrap's process group.
		cmd := exec.Command(f.rie, //nolint:noctx // see above
			"--runtime-interface-emulator-address", "127.0.0.1:"+port,
			"--runtime-api-address", "127.0.0.1:"+apiPort,
			f.bootstrap)
		cmd.Dir = filepath.Dir(f.bootstrap)
		cmd.Env = f.env
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		// Its own process group: stopping it stops the bootstrap it started.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting the RIE for %s: %w", f.ID, err)
		}
		go prefixLines(f.output, fmt.Sprintf("[%s#%d] ", f.ID, n), pr)
		inst := &instance{n: n, cmd: cmd, done: make(chan struct{}),
			url: "http://127.0.0.1:" + port + "/2015-03-31/functions/function/invocations"}
		go func() { _ = cmd.Wait(); _ = pw.Close(); close(inst.done) }()
		f.mu.Lock()
		f.all = append(f.all, inst)
		f.mu.Unlock()
		if err := waitListening(ctx, "127.0.0.1:"+port, inst.done); err != nil {
			inst.stop()
			lastErr = err
			continue // a port taken in between: try others
		}
		f.log.Info("function instance started", "function", f.ID, "instance", n, "pid", cmd.Process.Pid, "port", port,
			"start_ms", float64(time.Since(t0).Microseconds())/1000)
		if f.onStart != nil {
			f.onStart(f.ID, cmd.Process.Pid)
		}
		return inst, nil
	}
	return nil, fmt.Errorf("the RIE for %s did not start: %w", f.ID, lastErr)
}

func waitListening(ctx context.Context, addr string, done <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return errors.New("exited before listening")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := (&net.Dialer{Timeout: 100 * time.Millisecond}).DialContext(ctx, "tcp", addr); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s after 10s", addr)
}

// invokeMargin is how long past the function's timeout the emulator waits
// for the RIE's answer before it gives the instance up.
const invokeMargin = 5 * time.Second

// lambdaError is the body of a function error.
type lambdaError struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

func (f *Function) invoke(ctx context.Context, inst *instance, payload []byte) Invocation {
	ctx, cancel := context.WithTimeout(ctx, f.Timeout+invokeMargin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inst.url, bytes.NewReader(payload))
	if err != nil {
		f.put(inst)
		return Invocation{Result: ResultCrash, Error: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// Killed, or hung past its timeout: this instance is done for.
		inst.stop()
		res := ResultCrash
		if ctx.Err() != nil && !inst.exited() {
			res = ResultTimeout
		}
		return Invocation{Result: res, Error: err.Error()}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		// The RIE answers 502 when the runtime panicked or exited; it
		// starts it again on the next invoke.
		f.put(inst)
		return Invocation{Result: ResultCrash, Error: fmt.Sprintf("RIE answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))}
	}
	f.put(inst)
	if msg := strings.TrimSpace(string(body)); strings.HasPrefix(msg, "Task timed out") {
		// The RIE's own answer when the function outlived its timeout (it
		// then restarts the runtime for the next invocation).
		return Invocation{Result: ResultTimeout, Error: msg}
	}
	var le lambdaError
	if json.Unmarshal(body, &le) == nil && le.ErrorType != "" {
		res := ResultError
		if strings.Contains(le.ErrorMessage, "timed out") {
			res = ResultTimeout
		}
		return Invocation{Result: res, Error: le.ErrorType + ": " + le.ErrorMessage, Payload: body}
	}
	return Invocation{Result: ResultOK, Payload: body}
}

// stop ends the instance and its bootstrap (its process group): SIGTERM,
// then SIGKILL after a grace period.
func (inst *instance) stop() {
	if inst.exited() {
		return
	}
	pgid := inst.cmd.Process.Pid
	// The RIE runs the bootstrap in a process group of its own: the
	// bootstrap is ended by its PID once the RIE is gone.
	children := Descendants(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-inst.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-inst.done
	}
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Descendants returns the processes started under pid, children first
// (from Linux's /proc/<pid>/task/<tid>/children).
func Descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, Descendants(c)...)
			}
		}
	}
	return out
}

// Stop ends every instance the function started.
func (f *Function) Stop() {
	f.mu.Lock()
	all := f.all
	f.all, f.idle = nil, nil
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, inst := range all {
		wg.Go(inst.stop)
	}
	wg.Wait()
}

func freePort() (string, error) {
	for range 50 {
		l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		// The kernel may hand a closed port out again at once: two RIEs of
		// this process then got the same one, and the second's wait saw the
		// first listening there. A port is handed out once per process.
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return strconv.Itoa(port), nil
		}
	}
	return "", errors.New("no loopback port not handed out already")
}

// handedOut holds the ports freePort has handed out.
var handedOut sync.Map

// prefixLines copies r to w line by line, each line prefixed.
func prefixLines(w io.Writer, prefix string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var mu sync.Mutex
	for sc.Scan() {
		mu.Lock()
		_, _ = fmt.Fprintf(w, "%s%s\n", prefix, sc.Bytes())
		mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}
