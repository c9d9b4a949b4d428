// Command berth-emulate runs berth's SAM stack (template.yaml) on this
// machine: every function under the Lambda Runtime Interface Emulator,
// DynamoDB Local and the SQS emulator with the template's tables and
// queues, the event source mappings and schedules, and the HTTP API at
// EMULATE_ADDR (internal/emulate). `make emulate` runs it.
//
//	berth-emulate [--template template.yaml] [--config $BERTH_CONFIG] [--addr $EMULATE_ADDR]
//	              [--parameter Name=Value]... [--schedule-every 10s] [--visibility-timeout 10s]
//	              [--templates DIR] [--stack-name berth]
//
// It prints "API on http://<addr>" once every part is ready; SIGTERM or
// Ctrl-C stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/berth-io/berth/internal/emulate"
)

// params collects repeated --parameter Name=Value flags.
type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }
func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want Name=Value, got %q", s)
	}
	p[k] = v
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o := emulate.Options{Parameters: params{}}
	fs := flag.NewFlagSet("berth-emulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Template, "template", "template.yaml", "the SAM template")
	fs.StringVar(&o.ConfigFile, "config", os.Getenv("BERTH_CONFIG"), "berth config file: docker.hosts, container: keys, auth.tokens (default $BERTH_CONFIG)")
	addr := os.Getenv("EMULATE_ADDR")
	if addr == "" {
		addr = emulate.DefaultAddr
	}
	fs.StringVar(&o.Addr, "addr", addr, "the HTTP API's listen address (default $EMULATE_ADDR, else "+emulate.DefaultAddr+")")
	fs.StringVar(&o.StackName, "stack-name", os.Getenv("EMULATE_STACK_NAME"), "AWS::StackName, the prefix of resource names (default berth)")
	fs.Var(params(o.Parameters), "parameter", "template parameter override Name=Value (repeatable)")
	fs.DurationVar(&o.ScheduleEvery, "schedule-every", 0, "run every schedule at this period instead of the template's rate")
	fs.DurationVar(&o.VisibilityTimeout, "visibility-timeout", 0, "replace every queue's visibility timeout (faster redelivery)")
	fs.StringVar(&o.Templates, "templates", "", "directory of berth template JSON files to put at start, as the admin")
	fs.IntVar(&o.DefaultConcurrency, "concurrency", emulate.DefaultConcurrency, "instances of a function without reserved concurrency")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "berth-emulate: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.ConfigFile == "" {
		fmt.Fprintln(stderr, "berth-emulate: set BERTH_CONFIG (or --config) to a berth config file, e.g. testdata/config.example.yml")
		return 2
	}
	o.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	o.FunctionOutput = stderr
	o.Ready = func(url string) { fmt.Fprintf(stdout, "API on %s\n", url) }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := emulate.Run(ctx, o); err != nil {
		o.Logger.Error("berth-emulate stopped", "error", err.Error())
		return 1
	}
	return 0
}
