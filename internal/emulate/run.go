package emulate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/samtemplate"
)

// Run emulates the stack until ctx ends, then stops everything it started.
// It goes by phase, each one in a file of its own: the template
// (loadStack), the services and the template's resources (run_resources.go),
// the functions (run_functions.go), the pollers and schedules
// (run_pollers.go), and the front door (run_serve.go).
func Run(ctx context.Context, o Options) error {
	o.defaults()
	e := &emulation{o: o, log: o.Logger, env: map[string]string{}}
	defer e.close()
	for _, kv := range o.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e.env[k] = v
		}
	}
	if err := e.loadStack(); err != nil {
		return err
	}
	if err := e.startServices(ctx); err != nil {
		return err
	}
	if err := e.createResources(ctx); err != nil {
		return err
	}
	if err := e.startFunctions(ctx); err != nil {
		return err
	}
	if err := e.startPollers(ctx); err != nil {
		return err
	}
	return e.serve(ctx)
}

// defaults fills the options left unset.
func (o *Options) defaults() {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.DefaultConcurrency <= 0 {
		o.DefaultConcurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.FunctionOutput == nil {
		o.FunctionOutput = os.Stderr
	}
	o.FunctionOutput = &lockedWriter{w: o.FunctionOutput}
	if o.Env == nil {
		o.Env = os.Environ()
	}
}

// emulation is one run of the stack: what each phase of Run leaves for the
// next, and what to undo at the end.
type emulation struct {
	o   Options
	log *slog.Logger
	// env is o.Env as a map; the services' endpoints are added to it.
	env     map[string]string
	root    string // the template's directory
	cfg     *config.Config
	dc      *deployConfig
	tplOpts samtemplate.Options
	stack   *samtemplate.Stack

	ddb        *dynamodb.Client
	streams    *dynamodbstreams.Client
	sqs        *sqs.Client
	queues     map[string]queueInfo
	streamARNs map[string]string // by table logical ID
	fns        map[string]*Function

	// undo holds what close runs, last added first.
	undo []func()
}

// close undoes what the phases did, in reverse order.
func (e *emulation) close() {
	for i := len(e.undo) - 1; i >= 0; i-- {
		e.undo[i]()
	}
}

// loadStack reads BERTH_CONFIG and the template with the parameters it
// gives, and makes the state directory.
func (e *emulation) loadStack() (err error) {
	o := &e.o
	if e.root, err = filepath.Abs(filepath.Dir(o.Template)); err != nil {
		return err
	}
	e.cfg, err = config.Load(o.ConfigFile, func(k string) (string, bool) { v, ok := e.env[k]; return v, ok })
	if err != nil {
		return fmt.Errorf("BERTH_CONFIG %s: %w", o.ConfigFile, err)
	}
	if o.StateDir == "" {
		if o.StateDir, err = os.MkdirTemp("", "berth-emulate-"); err != nil {
			return err
		}
		dir := o.StateDir
		e.undo = append(e.undo, func() { _ = os.RemoveAll(dir) })
	}

	e.tplOpts = samtemplate.Options{StackName: o.StackName, Region: e.env["AWS_REGION"]}
	if e.tplOpts.Region == "" {
		e.tplOpts.Region = samtemplate.DefaultRegion
	}
	stackName := o.StackName
	if stackName == "" {
		stackName = samtemplate.DefaultStackName
	}
	// BERTH_CONFIG is the deployment's configuration: served as the
	// template's parameter and secret, to the functions it lets read them.
	if e.dc, err = newDeployConfig(o.ConfigFile, stackName, e.tplOpts.Region); err != nil {
		return err
	}
	e.undo = append(e.undo, e.dc.close)
	overrides := e.dc.parameters()
	for k, v := range o.Parameters {
		overrides[k] = v
	}
	e.stack, e.tplOpts.Parameters, err = LoadStack(o.Template, e.cfg, e.tplOpts, overrides)
	return err
}
