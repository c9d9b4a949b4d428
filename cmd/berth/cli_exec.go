package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/client"
)

// cliExitTimedOut is `berth containers exec`'s status when the command
// outlived its timeout and was killed: timeout(1)'s.
const cliExitTimedOut = 124

// cliExecCommand is `berth containers exec`.
func cliExecCommand() cliCommand {
	return cliCommand{group: "containers", name: "exec",
		synopsis: "ID [--timeout D] [--env K=V]... [--stdin] -- COMMAND [ARG...]",
		summary:  "run one command in a running container; exits with its exit code",
		details: `Runs COMMAND (no shell: give sh -c '...' for one) in the container once, and prints what it
wrote to stdout and stderr on the same streams. The exit status is the command's own; 124 when it outlived
--timeout (default 10s) and was killed. --stdin sends this command's standard input to it. Only where the
container's template allows exec (exec: true). Each stream is cut at the server's bound (256 KiB unless
configured); "berth: output truncated" is then said on stderr. Control characters are shown as ? unless
--raw. -o json prints the API's answer. Not retried: a command is not idempotent.`,
		run: cliContainersExec}
}

// cliEnvFlag collects repeated --env K=V.
type cliEnvFlag map[string]string

func (e cliEnvFlag) String() string { return "" }
func (e cliEnvFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--env takes NAME=value, not %q", v)
	}
	e[k] = val
	return nil
}

func cliContainersExec(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	req := client.ExecRequest{Env: map[string]string{}}
	fs.StringVar(&req.Timeout, "timeout", "", "kill the command after `D` (default 10s)")
	fs.Var(cliEnvFlag(req.Env), "env", "set `NAME=value` for the command (repeatable)")
	stdin := fs.Bool("stdin", false, "send this command's standard input to the command")
	raw := fs.Bool("raw", false, "print control characters as the command wrote them, not as ?")
	dash := slices.Index(args, "--")
	if dash < 0 {
		if _, err := app.parse(fs, args, "ID"); err != nil {
			return err
		}
		return cliUsagef("give the command after --: berth containers exec ID -- ls -l")
	}
	id, c, err := app.forID(fs, args[:dash])
	if err != nil {
		return err
	}
	if req.Command = args[dash+1:]; len(req.Command) == 0 {
		return cliUsagef("missing COMMAND after --")
	}
	if len(req.Env) == 0 {
		req.Env = nil
	}
	if *stdin {
		in, err := io.ReadAll(app.stdin)
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		s := string(in)
		req.Stdin = &s
	}
	res, err := c.Exec(ctx, id, req)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		if err := cliWriteJSON(app.stdout, res); err != nil {
			return err
		}
	} else if err := app.printExec(res, *raw); err != nil {
		return err
	}
	switch {
	case res.TimedOut:
		return &cliReported{code: cliExitTimedOut}
	case res.ExitCode != nil && *res.ExitCode != 0:
		// A shell's convention: a status beyond 255 is not one.
		return &cliReported{code: *res.ExitCode & 0xff}
	}
	return nil
}

// printExec writes the command's streams on the CLI's own, then what berth
// has to say about them.
func (app *cliApp) printExec(res client.ExecResult, raw bool) error {
	for _, s := range []struct {
		w    io.Writer
		text string
	}{{app.stdout, res.Stdout}, {app.stderr, res.Stderr}} {
		if err := cliCleanOutput(s.w, raw, func(w io.Writer) error {
			_, err := io.WriteString(w, s.text)
			return err
		}); err != nil {
			return err
		}
	}
	if res.Truncated {
		fmt.Fprintln(app.stderr, "berth: output truncated at the server's bound")
	}
	if res.TimedOut {
		fmt.Fprintf(app.stderr, "berth: the command timed out after %d ms and was killed\n", res.DurationMS)
	}
	return nil
}
