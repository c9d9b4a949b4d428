// Command berth is the local all-in-one server (`berth serve`) and a
// command-line client of berth's HTTP API (every other subcommand).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run())
}

// run is main without os.Exit, so that the signal handler is released
// before the process exits.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		return runServe(ctx, os.Args[2:], os.Stdout, os.Stderr)
	}
	return runCLI(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
}
