package main

// The berth command-line client: every subcommand but `serve` (main.go
// hands the others to runCLI). It speaks the HTTP API through
// internal/client; flags are the standard library's, parsed so that flags
// and arguments may come in any order.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/client"
)

// cliVersion is the CLI's version (-ldflags "-X main.cliVersion=v1.2.3");
// when unset, the module version recorded in the binary, else "dev".
var cliVersion = ""

func cliVersionString() string {
	if cliVersion != "" {
		return cliVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// cliDefaultURL is where `berth serve` listens by default.
const cliDefaultURL = "http://127.0.0.1:8080"

// Exit statuses.
const (
	cliExitOK    = 0
	cliExitError = 1 // the API refused the request, or could not be reached
	cliExitUsage = 2 // the command line is wrong
)

// runCLI runs one berth subcommand (args without the program name) and
// returns its exit status. env looks up environment variables (os.Getenv).
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	return cliMain(ctx, args, os.Stdin, stdout, stderr, env)
}

// cliApp is one run of the CLI: its streams and the global flags.
type cliApp struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) string

	url, token, output string
	// printedHeader: a table printed line by line (containers stats
	// --watch) has shown its header.
	printedHeader bool
}

// cliCommand is one `berth <group> <name>` subcommand.
type cliCommand struct {
	group, name string
	synopsis    string // after "berth <group> <name> "
	summary     string // one line, for `berth help`
	details     string // more, for `berth help <group> <name>`
	// run defines its flags on fs, parses args with app.parse and does the work.
	run func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error
}

// cliGroups lists the command groups and the names they answer to.
var cliGroups = []struct {
	name    string
	aliases []string
	summary string
}{
	{"containers", []string{"container", "c"}, "create, inspect, start, stop, pause and delete containers"},
	{"groups", []string{"group", "g"}, "see, finish and reset the groups of containers (a DAG run, a session)"},
	{"templates", []string{"template", "t"}, "publish and read the templates containers are made from"},
	{"webhooks", []string{"webhook", "w"}, "subscribe URLs to your containers' status changes (signed deliveries)"},
	{"quotas", []string{"quota", "q"}, "see your quotas and use; admins set users' and teams' limits"},
	{"usage", nil, "who used what, to bill it"},
}

func cliGroupName(s string) (string, bool) {
	for _, g := range cliGroups {
		if s == g.name || slices.Contains(g.aliases, s) {
			return g.name, true
		}
	}
	return "", false
}

// usage is the command's synopsis line: "berth containers get ID".
func (c cliCommand) usage() string {
	return strings.TrimSpace("berth " + c.path() + " " + c.synopsis)
}

// path is "group name", or the group alone for a group that is one
// command (name "": berth usage).
func (c cliCommand) path() string { return strings.TrimSpace(c.group + " " + c.name) }

func cliFind(group, name string) (cliCommand, bool) {
	for _, c := range cliCommands {
		if c.group == group && c.name == name {
			return c, true
		}
	}
	return cliCommand{}, false
}

// cliUsageError is a wrong command line: exit 2.
type cliUsageError struct{ msg string }

func (e *cliUsageError) Error() string { return e.msg }

func cliUsagef(format string, args ...any) error {
	return &cliUsageError{msg: fmt.Sprintf(format, args...)}
}

// cliReported is an error already printed: only the exit status remains.
type cliReported struct{ code int }

func (e *cliReported) Error() string { return "exit " + strconv.Itoa(e.code) }

func cliMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	if env == nil {
		env = func(string) string { return "" }
	}
	app := &cliApp{stdin: stdin, stdout: stdout, stderr: stderr, env: env}

	global := app.newFlagSet("berth")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			app.printHelp(stdout)
			return cliExitOK
		}
		fmt.Fprintf(stderr, "berth: %v\nRun 'berth help' for usage.\n", err)
		return cliExitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		app.printHelp(stderr)
		return cliExitUsage
	}
	switch rest[0] {
	case "help":
		return app.help(rest[1:])
	case "version":
		fmt.Fprintf(stdout, "berth-cli %s\n", cliVersionString())
		return cliExitOK
	case "serve":
		// main.go runs serve itself; reaching here means it is not built in.
		fmt.Fprintln(stderr, "berth: serve is not available in this build")
		return cliExitError
	}
	group, ok := cliGroupName(rest[0])
	if !ok {
		fmt.Fprintf(stderr, "berth: unknown command %q\nRun 'berth help' for usage.\n", rest[0])
		return cliExitUsage
	}
	if cmd, ok := cliFind(group, ""); ok {
		return app.runCommand(ctx, cmd, rest[1:])
	}
	if len(rest) < 2 || rest[1] == "-h" || rest[1] == "--help" || rest[1] == "help" {
		w, code := stdout, cliExitOK
		if len(rest) < 2 {
			w, code = stderr, cliExitUsage
		}
		app.printGroupHelp(w, group)
		return code
	}
	cmd, ok := cliFind(group, rest[1])
	if !ok {
		fmt.Fprintf(stderr, "berth %s: unknown command %q\nRun 'berth help %s' for usage.\n", group, rest[1], group)
		return cliExitUsage
	}
	return app.runCommand(ctx, cmd, rest[2:])
}

func (app *cliApp) runCommand(ctx context.Context, cmd cliCommand, args []string) int {
	fs := app.newFlagSet("berth " + cmd.path())
	err := cmd.run(ctx, app, fs, args)
	var (
		ue  *cliUsageError
		rep *cliReported
	)
	switch {
	case err == nil:
		return cliExitOK
	case errors.Is(err, flag.ErrHelp):
		app.printCommandHelp(app.stdout, cmd, fs)
		return cliExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(app.stderr, "berth %s: %s\nUsage: %s\nRun 'berth %s -h' for details.\n",
			cmd.path(), ue.msg, cmd.usage(), cmd.path())
		return cliExitUsage
	case errors.As(err, &rep):
		return rep.code
	default:
		app.printError(err)
		return cliExitError
	}
}

// newFlagSet makes a flag set carrying the global flags, which may thus be
// given before the command or among its own flags.
func (app *cliApp) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, usage by printCommandHelp
	fs.Usage = func() {}
	fs.Var(cliGlobal{&app.url}, "url", "API base `URL`, with any path prefix such as a stage (env BERTH_URL; default "+cliDefaultURL+")")
	fs.Var(cliGlobal{&app.token}, "token", "bearer `token` (env BERTH_TOKEN)")
	fs.Var(cliGlobal{&app.output}, "o", "output `format`: table (default) or json (the API's JSON)")
	fs.Var(cliGlobal{&app.output}, "output", "same as -o")
	return fs
}

// cliGlobal is a global flag's value, shared by every flag set of a run.
// It shows no default, so that help never prints a token given earlier.
type cliGlobal struct{ p *string }

func (g cliGlobal) String() string     { return "" }
func (g cliGlobal) Set(v string) error { *g.p = v; return nil }

// parse parses args into fs's flags, flags and arguments in any order
// ("--" ends the flags), and checks the arguments against argNames; names
// in brackets ("[NAME]") are optional and come last.
func (app *cliApp) parse(fs *flag.FlagSet, args []string, argNames ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &cliUsageError{msg: err.Error()}
		}
		rest := fs.Args()
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	switch app.output {
	case "", "table", "json":
	default:
		return nil, cliUsagef("-o must be table or json, not %q", app.output)
	}
	required := 0
	for _, n := range argNames {
		if !strings.HasPrefix(n, "[") {
			required++
		}
	}
	if len(pos) < required {
		return nil, cliUsagef("missing %s", strings.Join(argNames[len(pos):required], " "))
	}
	if len(pos) > len(argNames) {
		return nil, cliUsagef("unexpected argument %q", pos[len(argNames)])
	}
	return pos, nil
}

// forID parses a command that takes one argument, a resource's ID, and
// returns it with an API client.
func (app *cliApp) forID(fs *flag.FlagSet, args []string) (string, *client.Client, error) {
	return app.forArg(fs, args, "ID")
}

// forArg parses a command that takes one argument, named name in its
// usage (a group, a template's name), and returns it with an API client.
func (app *cliApp) forArg(fs *flag.FlagSet, args []string, name string) (string, *client.Client, error) {
	pos, err := app.parse(fs, args, name)
	if err != nil {
		return "", nil, err
	}
	c, err := app.client()
	return pos[0], c, err
}

func (app *cliApp) jsonOutput() bool { return app.output == "json" }

// client returns an API client from the flags and the environment.
func (app *cliApp) client() (*client.Client, error) {
	base := app.url
	if base == "" {
		base = app.env("BERTH_URL")
	}
	if base == "" {
		base = cliDefaultURL
	}
	token := app.token
	if token == "" {
		token = app.env("BERTH_TOKEN")
	}
	opts := []client.Option{client.WithUserAgent("berth-cli/" + cliVersionString())}
	retries, maxWait := 3, 10*time.Second
	if v := app.env("BERTH_RETRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 20 {
			return nil, cliUsagef("BERTH_RETRIES must be a number 0-20, not %q", v)
		}
		retries = n
	}
	if v := app.env("BERTH_RETRY_MAX_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, cliUsagef("BERTH_RETRY_MAX_WAIT must be a duration such as 5s, not %q", v)
		}
		maxWait = d
	}
	opts = append(opts, client.WithRetry(retries, maxWait))
	c, err := client.New(base, token, opts...)
	if err != nil {
		return nil, &cliUsageError{msg: err.Error()}
	}
	if u, _ := url.Parse(c.BaseURL()); token != "" && u != nil && u.Scheme == "http" && !cliLoopback(u.Hostname()) {
		fmt.Fprintf(app.stderr, "berth: warning: sending the token in clear text to %s; use https\n", u.Host)
	}
	return c, nil
}

func cliLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (app *cliApp) tokenGiven() bool { return app.token != "" || app.env("BERTH_TOKEN") != "" }

// printError reports a failed command on stderr: an API problem with its
// title, detail, current status and field errors; anything else as it is.
func (app *cliApp) printError(err error) {
	w := app.stderr
	var ae *client.Error
	if !errors.As(err, &ae) {
		fmt.Fprintf(w, "berth: %s\n", cliClean(err.Error()))
		var ne *net.OpError
		if errors.As(err, &ne) {
			fmt.Fprintln(w, "  Is the berth server running and BERTH_URL (or --url) right?")
		}
		return
	}
	p := ae.Problem
	fmt.Fprintf(w, "berth: %s (%d)", cliClean(ae.Title()), ae.Status)
	if p.Detail != "" && !cliDetailRepeatsFields(p) {
		fmt.Fprintf(w, ": %s", cliClean(p.Detail))
	}
	fmt.Fprintln(w)
	if p.CurrentStatus != "" {
		fmt.Fprintf(w, "  current status: %s\n", cliClean(p.CurrentStatus))
	}
	for _, f := range p.Errors {
		fmt.Fprintf(w, "  %s: %s\n", cliClean(f.Field), cliClean(f.Message))
	}
	switch {
	case ae.Status == 401 && !app.tokenGiven():
		fmt.Fprintln(w, "  No token was given: set BERTH_TOKEN or pass --token.")
	case ae.Status == 401:
		fmt.Fprintln(w, "  The token was not accepted: check BERTH_TOKEN or --token.")
	case ae.Status == 429 || ae.Status == 503:
		msg := fmt.Sprintf("  Gave up after %d attempt(s)", max(ae.Attempts, 1))
		if ae.RetryAfter > 0 {
			msg += fmt.Sprintf("; the server asks to retry after %s", ae.RetryAfter)
		}
		fmt.Fprintln(w, msg+".")
	}
	if ae.Status >= 500 && ae.RequestID != "" {
		fmt.Fprintf(w, "  request id: %s\n", cliClean(ae.RequestID))
	}
}

// cliDetailRepeatsFields reports a detail that only lists the field errors
// printed below it (a 422's "invalid values: f: m; ...").
func cliDetailRepeatsFields(p client.Problem) bool {
	if len(p.Errors) == 0 {
		return false
	}
	for _, f := range p.Errors {
		if !strings.Contains(p.Detail, f.Field+": "+f.Message) {
			return false
		}
	}
	return true
}
