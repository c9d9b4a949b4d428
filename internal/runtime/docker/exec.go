package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Execer = (*Runtime)(nil)

// killTimeout bounds the second exec that kills a timed-out command's
// processes (runtime.ExecKillScript): it scans /proc a few times, which
// takes well under a second.
const killTimeout = 10 * time.Second

// Exec runs spec in ref's container (see runtime.Execer): an exec of the
// engine, attached without a TTY so that stdout and stderr come apart
// (the engine's multiplexed stream), each read into a bounded buffer. The
// engine has no call that kills an exec, and closing the attached stream
// leaves the process running, so at the timeout berth runs a second exec
// that kills every process carrying the first one's marker
// (runtime.ExecKillScript).
func (r *Runtime) Exec(ctx context.Context, ref runtime.Ref, spec runtime.ExecSpec) (runtime.ExecResult, error) {
	h, name, err := r.locate(ctx, "exec", ref)
	if err != nil {
		return runtime.ExecResult{}, err
	}
	node := h.cfg.Name
	// No inspect first: the engine refuses an exec in a container that is
	// not running (or is paused) with a 409, which is ErrConflict.
	start := time.Now()
	id, err := h.execStart(ctx, name, spec.Command, runtime.ExecEnv(spec), spec.Stdin)
	if err != nil {
		return runtime.ExecResult{}, classify(err, "exec", ref.InstanceID, node)
	}
	defer id.close()
	stdout := &runtime.BoundedBuffer{Limit: spec.OutputLimit}
	stderr := &runtime.BoundedBuffer{Limit: spec.OutputLimit}
	// copyErr is the copy's end, read once copied is closed.
	var copyErr error
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, copyErr = stdcopy.StdCopy(stdout, stderr, id.attached.Reader)
	}()
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	res := runtime.ExecResult{ExitCode: -1}
	select {
	case <-copied:
		if copyErr != nil && ctx.Err() == nil {
			return runtime.ExecResult{}, runtime.NewError(runtime.ErrUnavailable, "exec", ref.InstanceID, node, fmt.Errorf("reading the command's output: %w", copyErr))
		}
		res.ExitCode, err = h.execExit(ctx, id.id)
		if err != nil {
			return runtime.ExecResult{}, classify(err, "exec", ref.InstanceID, node)
		}
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.TimedOut = true
	}
	res.Duration = time.Since(start)
	if res.TimedOut {
		// Killed whether the timeout or the caller ended it; the kill
		// outlives a cancelled ctx.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		res.KillFailed = h.execKill(kctx, name, spec.Marker) != nil
		cancel()
		id.close()
		// The copy ends with the stream closed under it; its error says
		// nothing more than the timeout.
		<-copied
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	return res, nil
}

// execSession is an exec started and attached.
type execSession struct {
	id       string
	attached client.ExecAttachResult
	closed   bool
}

func (s *execSession) close() {
	if !s.closed {
		s.closed = true
		s.attached.Close()
	}
}

// execStart creates and starts an exec of cmd in the container, attached
// to its output (and its input when stdin is not nil: written, then
// closed).
func (h *host) execStart(ctx context.Context, name string, cmd, env []string, stdin []byte) (*execSession, error) {
	cr, err := h.cli.ExecCreate(ctx, name, client.ExecCreateOptions{
		AttachStdout: true, AttachStderr: true, AttachStdin: stdin != nil, Env: env, Cmd: cmd,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the exec: %w", err)
	}
	at, err := h.cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("starting the exec: %w", err)
	}
	s := &execSession{id: cr.ID, attached: at}
	if stdin != nil {
		go func() {
			// A command that exits without reading its input ends the
			// write with an error: nothing to report.
			_, _ = at.Conn.Write(stdin)
			_ = at.CloseWrite()
		}()
	}
	return s, nil
}

// execExit is the exit code of an exec whose output has ended: the engine
// may report it a moment after the streams close.
func (h *host) execExit(ctx context.Context, id string) (int, error) {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		in, err := h.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("inspecting the exec: %w", err)
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// errKillIncomplete: the kill script ran but reported processes left (or
// could not run: no /bin/sh in the image).
var errKillIncomplete = errors.New("the timed-out command's processes could not all be killed")

// execKill kills every process of the container that carries marker
// (runtime.ExecKillScript), as a second exec, and waits for it.
func (h *host) execKill(ctx context.Context, name, marker string) error {
	s, err := h.execStart(ctx, name, runtime.ExecKillScript(marker), nil, nil)
	if err != nil {
		return err
	}
	defer s.close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, s.attached.Reader); err != nil {
		return fmt.Errorf("running the kill: %w", err)
	}
	code, err := h.execExit(ctx, s.id)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%w (exit %d: %.200s)", errKillIncomplete, code, out.String())
	}
	return nil
}
