package manager

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ExecRequest is the body of POST /api/containers/{id}/exec.
type ExecRequest struct {
	// Command is the program and its arguments, run without a shell.
	Command []string `json:"command"`
	// Stdin, if given, is the command's standard input (then closed).
	Stdin *string `json:"stdin,omitempty"`
	// Timeout bounds the command ("10s"); empty: DefaultExecTimeout, or
	// the limit's MaxTimeout if that is shorter.
	Timeout string `json:"timeout,omitempty"`
	// Env adds variables to the container's environment for the command.
	Env map[string]string `json:"env,omitempty"`
}

// Bounds of an exec request that no configuration changes: a command is a
// handful of words (the history records it), not a script upload.
const (
	// MaxExecArgs bounds the command's words.
	MaxExecArgs = 256
	// MaxExecCommandBytes bounds the command's words together.
	MaxExecCommandBytes = 8 << 10
	// MaxExecEnv bounds the env's variables.
	MaxExecEnv = 64
	// DefaultExecTimeout is an exec's timeout when the request gives none.
	DefaultExecTimeout = 10 * time.Second
	// execHoldMargin is added to an exec's timeout for its concurrency
	// leases: the kill at the timeout and the answer's writing come after
	// it, and a process that died holding a lease frees it by then.
	execHoldMargin = 30 * time.Second
)

// ExecLimits are a deployment's bounds on execs (server.exec_max_timeout,
// server.max_execs_per_owner, server.max_execs_per_container).
type ExecLimits struct {
	// MaxTimeout is the longest timeout a request may ask for.
	MaxTimeout time.Duration
	// PerOwner and PerContainer bound the execs in progress of one caller
	// and in one container, across every process of the deployment (store
	// leases); beyond either an exec is ErrExecBusy.
	PerOwner, PerContainer int
}

// ErrExecBusy is an exec beyond ExecLimits' concurrency bounds (429).
var ErrExecBusy = errors.New("too many execs in progress")

// Exec is an exec admitted by BeginExec: checked, counted against its
// bounds and recorded as started. Its command runs once, and Finish
// records how it ended and gives its places back.
type Exec struct {
	Instance container.Instance
	Command  []string
	// Stdin is nil when the request gave none.
	Stdin   []byte
	Env     map[string]string
	Timeout time.Duration
	// Marker is unique to this exec (container.ExecMarkerEnv).
	Marker string

	m      *Manager
	actor  string
	leases []store.Lease
}

// BeginExec admits an exec of req in container id for c: the request
// valid (422), the container c's to see (404), its template allowing exec
// (403: ErrForbidden), the instance running (409), a place free under lim
// (ErrExecBusy), and the start recorded in the instance's history. Nothing
// runs, nothing is held, if any of it fails.
func (m *Manager) BeginExec(ctx context.Context, c identity.Caller, id string, req ExecRequest, lim ExecLimits) (*Exec, error) {
	timeout, err := validateExec(req, lim)
	if err != nil {
		return nil, err
	}
	inst, err := m.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	t, err := m.GetTemplate(ctx, inst.Template)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil || !t.Exec {
		return nil, fmt.Errorf("template %q does not allow exec (an admin sets exec: true on it): %w", inst.Template, ErrForbidden)
	}
	if inst.Status != fsm.Running || inst.RestartAt != nil {
		return nil, &StateError{Op: "exec in", Current: inst.Status}
	}
	x := &Exec{Instance: inst, Command: req.Command, Env: req.Env, Timeout: timeout, Marker: container.NewID(), m: m, actor: c.Actor()}
	if req.Stdin != nil {
		x.Stdin = []byte(*req.Stdin)
	}
	if err := x.take(ctx, lim); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("exec started: %s (timeout %s)", quoteCommand(x.Command), timeout)
	if err := x.record(ctx, container.EventExecStarted, msg, nil); err != nil {
		x.release(ctx)
		return nil, err
	}
	m.log.InfoContext(ctx, "exec started", "instance_id", id, "actor", c.Actor(), "argv0", req.Command[0])
	return x, nil
}

// ExecOutcome is how an admitted exec ended, as Finish records it.
type ExecOutcome struct {
	ExitCode   int
	Duration   time.Duration
	TimedOut   bool
	KillFailed bool
	Truncated  bool
	// Err is why the command could not be run (the runtime's failure);
	// nil when it ran.
	Err error
}

// Finish records how x ended in the instance's history (whatever the
// instance's status is by now) and gives its places back. The record is
// made even when ctx has ended (the caller left): the audit log does not
// depend on the client waiting.
func (x *Exec) Finish(ctx context.Context, o ExecOutcome) error {
	ctx = context.WithoutCancel(ctx)
	defer x.release(ctx)
	cmd := quoteCommand(x.Command)
	took := o.Duration.Round(time.Millisecond)
	var code *int
	var msg string
	switch {
	case o.Err != nil:
		msg = fmt.Sprintf("exec failed: %s could not be run", cmd)
	case o.TimedOut && o.KillFailed:
		msg = fmt.Sprintf("exec timed out: %s after %s; its processes could not all be killed", cmd, took)
	case o.TimedOut:
		msg = fmt.Sprintf("exec timed out: %s after %s, killed", cmd, took)
	default:
		code = &o.ExitCode
		msg = fmt.Sprintf("exec ended: %s exited %d after %s", cmd, o.ExitCode, took)
	}
	if o.Truncated {
		msg += " (output truncated)"
	}
	err := x.record(ctx, container.EventExecFinished, msg, code)
	x.m.log.InfoContext(ctx, "exec finished", "instance_id", x.Instance.ID, "actor", x.actor,
		"exit_code", o.ExitCode, "timed_out", o.TimedOut, "duration", took)
	return err
}

// record appends an exec event to the instance's history at its current
// status.
func (x *Exec) record(ctx context.Context, typ, msg string, code *int) error {
	_, err := x.m.advance(ctx, x.Instance.ID, func(inst container.Instance) (*store.TransitionParams, error) {
		return &store.TransitionParams{To: inst.Status, Event: &container.Event{Type: typ, From: inst.Status, To: inst.Status,
			At: x.m.now().UTC(), Message: msg, ExitCode: code, Actor: x.actor}}, nil
	})
	if err != nil {
		return fmt.Errorf("recording the exec in %s: %w", x.Instance.ID, err)
	}
	return nil
}

// take holds one of the caller's and one of the container's exec places
// for the exec's timeout and a margin.
func (x *Exec) take(ctx context.Context, lim ExecLimits) error {
	now := x.m.now()
	until := now.Add(x.Timeout + execHoldMargin)
	for _, k := range []struct {
		key, whose string
		n          int
	}{{"exec-owner#" + x.actor, "your", lim.PerOwner}, {"exec-container#" + x.Instance.ID, "this container's", lim.PerContainer}} {
		if k.n <= 0 {
			continue
		}
		l, ok, err := x.m.store.TakeLease(ctx, k.key, x.Marker, k.n, until, now)
		if err != nil {
			x.release(ctx)
			return fmt.Errorf("counting execs in progress: %w", err)
		}
		if !ok {
			x.release(ctx)
			return fmt.Errorf("%w: %s %d already running; retry when one has ended", ErrExecBusy, k.whose, k.n)
		}
		x.leases = append(x.leases, l)
	}
	return nil
}

// release gives the exec's places back; a place that cannot be given back
// runs out by itself.
func (x *Exec) release(ctx context.Context) {
	for _, l := range x.leases {
		_ = x.m.store.ReleaseLease(context.WithoutCancel(ctx), l)
	}
	x.leases = nil
}

// validateExec checks req against the fixed bounds and lim, and returns
// its timeout.
func validateExec(req ExecRequest, lim ExecLimits) (time.Duration, error) {
	var f fields
	size := 0
	for _, a := range req.Command {
		size += len(a)
		if strings.ContainsRune(a, 0) {
			f.add("command", "an argument holds a NUL byte")
			break
		}
	}
	switch {
	case len(req.Command) == 0 || req.Command[0] == "":
		f.add("command", "is required: the program and its arguments, e.g. [\"ls\", \"-l\"]")
	case len(req.Command) > MaxExecArgs:
		f.add("command", "has %d words; at most %d", len(req.Command), MaxExecArgs)
	case size > MaxExecCommandBytes:
		f.add("command", "is %d bytes; at most %d (pass data on stdin)", size, MaxExecCommandBytes)
	case strings.Contains(req.Command[0], "="):
		f.add("command", "the program's name may not hold '='")
	}
	if len(req.Env) > MaxExecEnv {
		f.add("env", "has %d variables; at most %d", len(req.Env), MaxExecEnv)
	}
	for k, v := range req.Env {
		switch {
		case !envName.MatchString(k):
			f.add("env", "%.64q is not a variable name (letters, digits and _, not first a digit)", k)
		case k == container.ExecMarkerEnv:
			f.add("env", "%s is berth's own", k)
		case strings.ContainsRune(v, 0):
			f.add("env", "the value of %s holds a NUL byte", k)
		}
	}
	timeout := min(DefaultExecTimeout, lim.MaxTimeout)
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		switch {
		case err != nil:
			f.add("timeout", "%.32q is not a duration (e.g. 10s)", req.Timeout)
		case d <= 0:
			f.add("timeout", "must be positive")
		case d > lim.MaxTimeout:
			f.add("timeout", "%s is longer than this deployment's most, %s", d, lim.MaxTimeout)
		default:
			timeout = d
		}
	}
	return timeout, f.err()
}

// quoteCommand is the command as the history shows it: its words quoted
// where they need it, cut at 512 bytes.
func quoteCommand(cmd []string) string {
	var b strings.Builder
	for i, a := range cmd {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && !strings.ContainsAny(a, " \t\n\"'\\$`;&|<>()*?[]{}#~") {
			b.WriteString(a)
		} else {
			b.WriteString(strconv.Quote(a))
		}
		if b.Len() > 512 {
			return b.String()[:512] + "…"
		}
	}
	return b.String()
}
