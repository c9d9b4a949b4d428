package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

const cliHelpHeader = `berth is the command-line client of the berth API.

Usage:
  berth [--url URL] [--token TOKEN] [-o table|json] <command> [arguments]
`

const cliHelpFooter = `Other commands:
  berth serve                 run the local all-in-one server ('berth serve -h')
  berth help [command]        show help for a command ('berth help containers create')
  berth version               print the CLI's version

Global flags (before the command or among its flags):
  --url URL                   API base URL; may carry a path prefix such as an API Gateway stage
                              (https://abc.execute-api.eu-west-1.amazonaws.com/prod)
  --token TOKEN               bearer token
  -o, --output table|json     human-readable table (default) or the API's JSON

Environment:
  BERTH_URL                   base URL when --url is not given (default ` + cliDefaultURL + `)
  BERTH_TOKEN                 token when --token is not given
  BERTH_RETRIES               retries of a 429 or 503 answer (default 3; 0 disables)
  BERTH_RETRY_MAX_WAIT        longest wait before a retry, whatever Retry-After says (default 10s; 0: at once)

Exit status: 0 success; 1 the API refused the request (its problem is printed) or could not
be reached; 2 the command line is wrong.
`

func (app *cliApp) printHelp(w io.Writer) {
	fmt.Fprint(w, cliHelpHeader)
	for _, g := range cliGroups {
		fmt.Fprintf(w, "\n%s%s (%s):\n", strings.ToUpper(g.name[:1]), g.name[1:], g.summary)
		for _, c := range cliCommands {
			if c.group == g.name {
				fmt.Fprintf(w, "  %s\n", c.usage())
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, cliHelpFooter)
}

func (app *cliApp) printSynopses(w io.Writer, group string) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range cliCommands {
		if c.group == group {
			fmt.Fprintf(tw, "  berth %s %s\t%s\n", c.group, c.name, c.summary)
		}
	}
	_ = tw.Flush()
}

func (app *cliApp) printGroupHelp(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage:\n")
	for _, c := range cliCommands {
		if c.group == group {
			fmt.Fprintf(w, "  %s\n", c.usage())
		}
	}
	fmt.Fprintf(w, "\nCommands:\n")
	app.printSynopses(w, group)
	fmt.Fprintf(w, "\nRun 'berth help %s <command>' for a command's flags; 'berth help' for the global ones.\n", group)
}

func (app *cliApp) printCommandHelp(w io.Writer, c cliCommand, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.usage(), c.summary)
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if cliGlobalFlags[f.Name] {
			return
		}
		if n++; n == 1 {
			fmt.Fprintf(tw, "\nFlags:\n")
		}
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", line, usage)
	})
	_ = tw.Flush()
	fmt.Fprintf(w, "\nGlobal flags: --url URL, --token TOKEN, -o table|json (see 'berth help').\n")
}

// cliGlobalFlags are the flags every command takes (cliApp.newFlagSet).
var cliGlobalFlags = map[string]bool{"url": true, "token": true, "o": true, "output": true}

// help serves `berth help [group [command]]`.
func (app *cliApp) help(args []string) int {
	if len(args) == 0 {
		app.printHelp(app.stdout)
		return cliExitOK
	}
	group, ok := cliGroupName(args[0])
	if !ok {
		fmt.Fprintf(app.stderr, "berth help: unknown command %q\nRun 'berth help' for usage.\n", args[0])
		return cliExitUsage
	}
	if cmd, ok := cliFind(group, ""); ok && len(args) == 1 {
		return app.runCommand(context.Background(), cmd, []string{"-h"})
	}
	if len(args) == 1 {
		app.printGroupHelp(app.stdout, group)
		return cliExitOK
	}
	cmd, ok := cliFind(group, args[1])
	if !ok {
		fmt.Fprintf(app.stderr, "berth help: unknown command %q\nRun 'berth help %s' for usage.\n", group+" "+args[1], group)
		return cliExitUsage
	}
	// A command's help needs its flags defined: run it with -h, which
	// stops at parsing.
	return app.runCommand(context.Background(), cmd, []string{"-h"})
}
