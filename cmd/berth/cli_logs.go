package main

import (
	"context"
	"flag"
	"io"

	"github.com/berth-io/berth/internal/client"
)

// cliLogsCommand is `berth containers logs`.
func cliLogsCommand() cliCommand {
	return cliCommand{group: "containers", name: "logs",
		synopsis: "ID [-f] [--tail N] [--since D] [--stream stdout|stderr|both] [--timestamps] [--raw]",
		summary:  "show what a container printed",
		details: `--since takes an RFC 3339 time or a duration (10m: the last ten minutes). -f follows the
output until the container ends (or Ctrl-C): berth serve streams it; behind API Gateway, which cannot
stream, it polls from where the last answer ended (every second while lines come, backing off to every
10 s while none do), printing each line once. Without -f, every line is printed: an answer the server cut at its bound (10,000 lines / 1 MiB) is followed by
the next one from where it stopped. Control characters a container printed (escape sequences, NUL,
carriage returns) are shown as ?, and bytes that are not UTF-8 as U+FFFD, as every other text the
server sends is; tabs and newlines are kept. --raw prints the output byte for byte.`,
		run: cliContainersLogs}
}

func cliContainersLogs(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	var o client.LogsOptions
	fs.BoolVar(&o.Follow, "f", false, "follow the output until the container ends")
	fs.BoolVar(&o.Follow, "follow", false, "the same as -f")
	fs.IntVar(&o.Tail, "tail", 0, "only the last `N` lines (1-10000)")
	fs.StringVar(&o.Since, "since", "", "only lines from `D` on: an RFC 3339 time or a duration (10m)")
	fs.StringVar(&o.Stream, "stream", "", "stdout, stderr or both (default both)")
	fs.BoolVar(&o.Timestamps, "timestamps", false, "start each line with its time")
	raw := fs.Bool("raw", false, "print control characters as the container wrote them, not as ?")
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	// A container's output could otherwise steer the terminal (retitle
	// it, rewrite what is shown, answer back through it).
	return cliCleanOutput(app.stdout, *raw, func(w io.Writer) error {
		if o.Follow {
			return c.FollowLogs(ctx, id, o, w)
		}
		for {
			next, err := c.Logs(ctx, id, o, w)
			if err != nil || next == "" || next == o.Since {
				return err
			}
			// The rest, from the first line the server left out; the tail
			// window, if any, is what was asked and is read to its end.
			o.Since, o.Tail = next, 0
		}
	})
}
