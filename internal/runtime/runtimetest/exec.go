package runtimetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// testExec: the Execer contract. Where the runtime runs commands
// (ExecServed): the exit code and the two streams apart, stdin and env
// reaching the command, each stream bounded by the output limit (1 MiB
// written, the limit kept, truncated said), and a command that outlives its
// timeout killed in the container with whatever it started (the process
// list has none of them after). Where it does not (kwok: Pods without
// processes), an exec of a running container is an error naming the
// operation. A container that does not exist is not found either way, and
// one that has stopped is a conflict.
func testExec(t *testing.T, h Harness) {
	ex, ok := h.Runtime.(runtime.Execer)
	if !ok {
		t.Fatalf("%T does not implement runtime.Execer", h.Runtime)
	}
	ctx := testenv.Context(t, h.Timeout)
	events := watch(t, ctx, h.Runtime)
	inst := h.Running(t)
	ref := createStarted(t, ctx, h.Runtime, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	spec := func(cmd ...string) runtime.ExecSpec {
		return runtime.ExecSpec{Command: cmd, Timeout: 30 * time.Second, OutputLimit: 64 << 10, Marker: container.NewID()}
	}

	if _, err := ex.Exec(ctx, runtime.Ref{InstanceID: container.NewID()}, spec("true")); !runtime.IsNotFound(err) {
		t.Errorf("exec in a missing container: %v, want not found", err)
	}
	if !h.ExecServed {
		_, err := ex.Exec(ctx, ref, spec("true"))
		var re *runtime.Error
		if err == nil || !errors.As(err, &re) || re.Op != "exec" {
			t.Errorf("exec where the runtime runs no commands: %v, want an error naming the operation", err)
		}
		return
	}

	res, err := ex.Exec(ctx, ref, spec("sh", "-c", "echo out; echo err >&2; exit 3"))
	if err != nil || res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.Truncated || res.TimedOut {
		t.Errorf("exec: %+v, %v; want exit 3, out and err apart", res, err)
	}
	in := spec("sh", "-c", `cat; echo "$GREETING"`)
	in.Stdin, in.Env = []byte("from stdin\n"), map[string]string{"GREETING": "hello"}
	if res, err := ex.Exec(ctx, ref, in); err != nil || res.ExitCode != 0 || string(res.Stdout) != "from stdin\nhello\n" {
		t.Errorf("exec with stdin and env: %+v, %v", res, err)
	}
	if res, err := ex.Exec(ctx, ref, spec("/no/such/program")); err != nil || res.ExitCode == 0 {
		t.Errorf("exec of a missing program: %+v, %v; want a non-zero exit", res, err)
	}

	big := spec("sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2")
	if res, err := ex.Exec(ctx, ref, big); err != nil || res.ExitCode != 0 || !res.Truncated ||
		len(res.Stdout) != big.OutputLimit || len(res.Stderr) != big.OutputLimit {
		t.Errorf("exec of 1 MiB per stream: exit %d, %d and %d bytes kept, truncated %v, %v; want %d each, truncated",
			res.ExitCode, len(res.Stdout), len(res.Stderr), res.Truncated, err, big.OutputLimit)
	}

	testExecTimeout(t, ctx, ex, ref, spec)

	if err := h.Runtime.Stop(ctx, ref, time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, events, inst.ID, "exited", kindIs(runtime.EventExited))
	if _, err := ex.Exec(ctx, ref, spec("true")); !runtime.IsConflict(err) {
		t.Errorf("exec in a stopped container: %v, want a conflict", err)
	}
}

// testExecTimeout: a command (and the child it started) that outlives its
// timeout is killed in the container, not left running.
func testExecTimeout(t *testing.T, ctx context.Context, ex runtime.Execer, ref runtime.Ref, spec func(...string) runtime.ExecSpec) {
	slow := spec("sh", "-c", "sleep 301 & sleep 300")
	slow.Timeout = time.Second
	start := time.Now()
	res, err := ex.Exec(ctx, ref, slow)
	if err != nil || !res.TimedOut || res.KillFailed || res.ExitCode != -1 {
		t.Fatalf("exec past its timeout: %+v, %v; want timed out and killed", res, err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("exec past its 1 s timeout took %s", took)
	}
	ps, err := ex.Exec(ctx, ref, spec("sh", "-c", `for d in /proc/[0-9]*; do tr '\0' ' ' < $d/cmdline; echo; done`))
	if err != nil || ps.ExitCode != 0 {
		t.Fatalf("listing the container's processes: %+v, %v", ps, err)
	}
	for _, line := range strings.Split(string(ps.Stdout), "\n") {
		if strings.Contains(line, "sleep 300") || strings.Contains(line, "sleep 301") {
			t.Errorf("a timed-out command's process is still running: %q (processes:\n%s)", line, bytes.TrimSpace(ps.Stdout))
		}
	}
}
