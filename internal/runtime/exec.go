package runtime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// ExecSpec is one command to run in a running container
// (POST /api/containers/{id}/exec, docs/api.md).
type ExecSpec struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Stdin, when not nil, is written to the command's standard input,
	// which is then closed; nil: the command gets no standard input.
	Stdin []byte
	// Env is added to the container's environment for this command only.
	Env map[string]string
	// Timeout bounds the command: past it the command's processes are
	// killed in the container and the result says TimedOut.
	Timeout time.Duration
	// OutputLimit is the most of each stream kept (bytes); the rest is
	// read and dropped, and the result says Truncated.
	OutputLimit int
	// Marker is a value unique to this exec, set in the command's
	// environment as ExecMarkerEnv so that its processes (and their
	// children, which inherit it) can be found and killed at the timeout.
	Marker string
}

// ExecMarkerEnv is the environment variable that marks an exec's
// processes (ExecSpec.Marker); a user's env may not set it.
const ExecMarkerEnv = container.ExecMarkerEnv

// ExecResult is what a command run by Exec did.
type ExecResult struct {
	// ExitCode is the command's exit status; -1 when it was killed at its
	// timeout or never reported one.
	ExitCode int
	// Stdout and Stderr are the first OutputLimit bytes of each stream.
	Stdout, Stderr []byte
	// Truncated: a stream had more than OutputLimit bytes.
	Truncated bool
	// TimedOut: the command outlived its Timeout and was killed.
	TimedOut bool
	// KillFailed: at the timeout berth could not confirm the command's
	// processes were killed (an image without /bin/sh, see docs/api.md).
	KillFailed bool
	// Duration is how long the command ran, as berth measured it.
	Duration time.Duration
}

// Execer is implemented by runtimes that run a command in a running
// container. Exec runs spec in ref's container and returns once the
// command has ended (or was killed at spec.Timeout), with its exit code and
// its two streams apart, each bounded by spec.OutputLimit so that memory
// does not grow with the output. A container that does not exist is
// ErrNotFound; one that is not running is ErrConflict; a command that
// cannot be started (no such program in the image) is a result with exit
// code 126 or 127, as a shell would give, not an error. ctx ending before
// the command does kills the command like a timeout.
type Execer interface {
	Exec(ctx context.Context, ref Ref, spec ExecSpec) (ExecResult, error)
}

// Exec runs spec in inst's container through its runtime's Execer (the
// Execer contract, addressed by instance). A runtime without one is
// ErrNotServed.
func (r *Resolver) Exec(ctx context.Context, inst container.Instance, spec ExecSpec) (ExecResult, error) {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return ExecResult{}, err
	}
	ex, ok := rt.(Execer)
	if !ok {
		return ExecResult{}, Errorf(ErrNotServed, "exec", inst.ID, inst.RuntimeNodeName, "the %s runtime cannot run commands", rt.Kind())
	}
	return ex.Exec(ctx, RefOf(inst), spec)
}

// ExecEnv is spec's environment as NAME=value pairs in name order, the
// marker last (so no user value can replace it).
func ExecEnv(spec ExecSpec) []string {
	out := make([]string, 0, len(spec.Env)+1)
	for k, v := range spec.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	if spec.Marker != "" {
		out = append(out, ExecMarkerEnv+"="+spec.Marker)
	}
	return out
}

// ExecKillScript is the command a runtime runs in the container, as a
// second exec, to kill a timed-out exec's processes: every process whose
// environment carries marker (the command and whatever it started) gets
// SIGKILL, and the script exits 0 once none is left (1 if some remain
// after its tries). It needs /bin/sh and cat in the image; a process that
// rewrote its environment escapes it.
func ExecKillScript(marker string) []string {
	if strings.ContainsAny(marker, "'\"\\$`* \n") {
		panic(fmt.Sprintf("exec marker %q is not a plain token", marker))
	}
	script := `m=` + ExecMarkerEnv + `=` + marker + `
i=0
while [ $i -lt 50 ]; do
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    case "$(cat $d/environ 2>/dev/null)" in *"$m"*) kill -9 "$p" 2>/dev/null; left=1;; esac
  done
  [ $left = 0 ] && exit 0
  i=$((i+1))
  sleep 0.1 2>/dev/null || sleep 1
done
exit 1`
	return []string{"/bin/sh", "-c", script}
}
