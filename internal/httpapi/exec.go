package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/config"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
)

// ExecRunner runs one command in an instance's running container: berth
// serve and the exec function on AWS make one from their runtimes (the
// api function holds no runtime client, so the route answers 501 there).
// Its contract is runtime.Execer's, addressed by instance.
type ExecRunner interface {
	Exec(ctx context.Context, inst container.Instance, spec runtime.ExecSpec) (runtime.ExecResult, error)
}

var _ ExecRunner = (*runtime.Resolver)(nil)

// ExecOptions configure POST /api/containers/{id}/exec.
type ExecOptions struct {
	// Runner runs the commands; nil answers the route 501.
	Runner ExecRunner
	// Limits bound each exec's timeout and the execs in progress.
	Limits manager.ExecLimits
	// OutputLimit is the most of each stream an answer carries (bytes);
	// the rest is read and dropped.
	OutputLimit int
}

// execResponse is the answer of POST /api/containers/{id}/exec.
type execResponse struct {
	// ExitCode is null when the command timed out (it was killed).
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
}

// execContainer serves POST /api/containers/{id}/exec: the command run
// once in the running container, answered 200 with its exit code and its
// two streams (each bounded), whatever the exit code. Refusals: 422 for a
// bad request, 404 for another owner's container, 403 where its template
// does not allow exec, 409 when it is not running, 429 beyond the
// concurrency bounds. Every admitted exec is two events in the instance's
// history (manager.BeginExec, Exec.Finish).
func (h *handler) execContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	var req manager.ExecRequest
	if err := decodeBody(r, h.bodyLimit, &req); err != nil {
		return err
	}
	if h.exec.Runner == nil {
		// Another owner's container is 404 here too, as on every route.
		if _, err := h.m.Get(r.Context(), c, r.PathValue("id")); err != nil {
			return err
		}
		writeProblem(w, r, http.StatusNotImplemented, "Not Implemented",
			"exec is served by berth serve and by the exec function, not by this deployment's API (see docs/api.md, Exec)", nil)
		return nil
	}
	x, err := h.m.BeginExec(r.Context(), c, r.PathValue("id"), req, h.exec.Limits)
	if err != nil {
		if errors.Is(err, manager.ErrExecBusy) {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, r, http.StatusTooManyRequests, "Too Many Requests", err.Error(), func(p *Problem) { p.RetryAfterSeconds = 1 })
			return nil
		}
		return err
	}
	res, err := h.exec.Runner.Exec(r.Context(), x.Instance, runtime.ExecSpec{
		Command: x.Command, Stdin: x.Stdin, Env: x.Env, Timeout: x.Timeout, OutputLimit: h.exec.OutputLimit, Marker: x.Marker,
	})
	ferr := x.Finish(r.Context(), manager.ExecOutcome{ExitCode: res.ExitCode, Duration: res.Duration, TimedOut: res.TimedOut,
		KillFailed: res.KillFailed, Truncated: res.Truncated, Err: err})
	if err != nil {
		return execError(x.Instance, err)
	}
	if ferr != nil {
		// The command ran; its end is not in the history. Said in the
		// log (the start is recorded), and the caller gets the result.
		h.log.WarnContext(r.Context(), "exec end not recorded", "instance_id", x.Instance.ID, "error", ferr)
	}
	out := execResponse{Stdout: string(res.Stdout), Stderr: string(res.Stderr), Truncated: res.Truncated,
		TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds()}
	if !res.TimedOut {
		out.ExitCode = &res.ExitCode
	}
	w.Header().Set("Berth-Exec-Duration-Ms", strconv.FormatInt(out.DurationMS, 10))
	writeJSON(w, http.StatusOK, out)
	return nil
}

// execError maps a runtime's failure to run a command to the API's
// errors, showing only the kind of failure (a runtime's messages name
// hosts).
func execError(inst container.Instance, err error) error {
	switch {
	case errors.Is(err, runtime.ErrNotServed):
		return &logsProblem{status: http.StatusNotImplemented, title: "Not Implemented",
			detail: "this container's runtime cannot run commands in it"}
	case runtime.IsNotFound(err), runtime.IsConflict(err):
		return &logsProblem{status: http.StatusConflict, title: "Conflict", current: inst,
			detail: "the container is not running on its runtime now: no command can run in it"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &logsProblem{status: http.StatusServiceUnavailable, title: "Service Unavailable",
		detail: "the container's runtime did not run the command; retry later"}
}

// ExecOptionsFrom is the exec route's options from the server section of
// the configuration, with r running the commands (nil: 501) and
// maxTimeout, if positive, holding server.exec_max_timeout to at most it
// (the exec function's 25 s under API Gateway).
func ExecOptionsFrom(s config.Server, r ExecRunner, maxTimeout time.Duration) ExecOptions {
	o := ExecOptions{Runner: r, OutputLimit: s.ExecOutputLimit, Limits: manager.ExecLimits{
		MaxTimeout: s.ExecMaxTimeout, PerOwner: s.MaxExecsPerOwner, PerContainer: s.MaxExecsPerContainer,
	}}
	if maxTimeout > 0 && o.Limits.MaxTimeout > maxTimeout {
		o.Limits.MaxTimeout = maxTimeout
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = config.DefaultExecOutputLimit
	}
	if o.Limits.MaxTimeout <= 0 {
		o.Limits.MaxTimeout = config.DefaultExecMaxTimeout
	}
	return o
}
