// Package emulate runs the SAM stack of template.yaml on one machine: every
// function as its real bootstrap under the Lambda Runtime Interface
// Emulator, DynamoDB Local and the SQS emulator with the template's tables
// and queues, pollers playing the template's event source mappings and
// schedules, and an HTTP front door playing the HTTP API with its JWT
// authorizer. What the template says is what runs; nothing about the
// stack is written here.
package emulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/samtemplate"
)

// Defaults of Options.
const (
	// DefaultAddr is where the front door listens (EMULATE_ADDR).
	DefaultAddr = "127.0.0.1:3000"
	// DefaultConcurrency is how many instances a function without reserved
	// concurrency may run at once (Lambda's own limit is the account's,
	// far beyond one machine).
	DefaultConcurrency = 4
)

// Options configure one emulated stack.
type Options struct {
	// Template is the path of template.yaml; CodeUri paths and the
	// project's scripts (scripts/testenv) are relative to its directory.
	Template string
	// ConfigFile is BERTH_CONFIG: docker.hosts, container: keys and
	// auth.tokens, in the format `berth serve` reads.
	ConfigFile string
	// Addr is the front door's listen address. Defaults to DefaultAddr.
	Addr string
	// StackName is AWS::StackName. Defaults to samtemplate.DefaultStackName.
	StackName string
	// Parameters override template parameters (as --parameter-overrides).
	Parameters map[string]string
	// ScheduleEvery, if set, replaces every schedule's rate (faster
	// reconciles for tests and demos), but an always-running function's
	// (runsAlways: the watcher's).
	ScheduleEvery time.Duration
	// Schedules, by the logical ID of the function a schedule invokes,
	// replace that schedule's rate (and ScheduleEvery); a negative period
	// turns the schedule off (the reconciler's, to see what the watcher
	// alone does).
	Schedules map[string]time.Duration
	// VisibilityTimeout, if set, replaces every queue's visibility timeout
	// (faster redelivery for tests and demos).
	VisibilityTimeout time.Duration
	// Templates is a directory of berth template JSON files (<name>.json)
	// put through the API as an admin at start, like `berth serve
	// --templates`.
	Templates string
	// DefaultConcurrency: see the constant. Defaults to DefaultConcurrency.
	DefaultConcurrency int
	// StateDir holds the builds and the services' state. Defaults to a new
	// temporary directory, removed at the end.
	StateDir string
	// Builder builds the functions. Defaults to one in StateDir.
	Builder *Builder
	// Env is the environment: AWS_ENDPOINT_URL_DYNAMODB and
	// AWS_ENDPOINT_URL_SQS, when set, name running emulators to use instead
	// of starting them. Defaults to os.Environ.
	Env []string
	// Logger gets the emulator's structured lines (one per invocation).
	Logger *slog.Logger
	// FunctionOutput gets what the functions print, each line prefixed
	// with [Function#instance]. Defaults to os.Stderr.
	FunctionOutput io.Writer
	// Ready is called once every part is ready, with the API's base URL.
	Ready func(url string)
	// OnInstanceStart, if set, is told of every RIE process started.
	OnInstanceStart func(function string, pid int)
}

// Run emulates the stack until ctx ends, then stops everything it started.
func Run(ctx context.Context, o Options) (err error) {
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
	log := o.Logger
	env := map[string]string{}
	for _, kv := range o.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	root, err := filepath.Abs(filepath.Dir(o.Template))
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.ConfigFile, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return fmt.Errorf("BERTH_CONFIG %s: %w", o.ConfigFile, err)
	}
	if o.StateDir == "" {
		if o.StateDir, err = os.MkdirTemp("", "berth-emulate-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.StateDir)
	}

	tplOpts := samtemplate.Options{StackName: o.StackName, Region: env["AWS_REGION"]}
	if tplOpts.Region == "" {
		tplOpts.Region = samtemplate.DefaultRegion
	}
	stackName := o.StackName
	if stackName == "" {
		stackName = samtemplate.DefaultStackName
	}
	// BERTH_CONFIG is the deployment's configuration: served as the
	// template's parameter and secret, to the functions it lets read them.
	dc, err := newDeployConfig(o.ConfigFile, stackName, tplOpts.Region)
	if err != nil {
		return err
	}
	defer dc.close()
	overrides := dc.parameters()
	for k, v := range o.Parameters {
		overrides[k] = v
	}
	var stack *samtemplate.Stack
	if stack, tplOpts.Parameters, err = LoadStack(o.Template, cfg, tplOpts, overrides); err != nil {
		return err
	}

	// The services.
	services := []*service{
		{name: "dynamodb-local", script: filepath.Join(root, "scripts/testenv/dynamodb-local.sh"), envVar: "AWS_ENDPOINT_URL_DYNAMODB"},
		{name: "sqs", script: filepath.Join(root, "scripts/testenv/sqs.sh"), envVar: "AWS_ENDPOINT_URL_SQS"},
	}
	// Each service writes only its own result; env is updated after all.
	endpoints := make([]string, len(services))
	errs := make([]error, len(services))
	var upWG sync.WaitGroup
	for i, s := range services {
		local := map[string]string{s.envVar: env[s.envVar]}
		upWG.Go(func() {
			endpoints[i], errs[i] = s.up(ctx, local, o.StateDir, o.FunctionOutput)
			if errs[i] == nil && s.state != "" {
				log.Info("service started", "service", s.name, s.envVar, endpoints[i], "pid", s.pid())
			}
		})
	}
	upWG.Wait()
	defer func() {
		for _, s := range services {
			if derr := s.down(o.FunctionOutput); derr != nil {
				log.Error("stopping a service", "service", s.name, "error", derr)
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range services {
		env[s.envVar] = endpoints[i]
	}
	awsCfg := aws.Config{Region: tplOpts.Region, Credentials: credentials.NewStaticCredentialsProvider("berth", "emulate", "")}
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL_DYNAMODB"])
		o.DisableValidateResponseChecksum = true
	})
	streams := dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL_DYNAMODB"])
	})
	sqsClient := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL_SQS"]) })

	// The resources, then the template again with their real URLs and ARNs.
	if err := createTables(ctx, ddb, stack); err != nil {
		return err
	}
	queues, err := createQueues(ctx, sqsClient, stack, o.VisibilityTimeout)
	if err != nil {
		return err
	}
	tplOpts.Attributes = map[string]map[string]string{}
	for id, q := range queues {
		tplOpts.Attributes[id] = map[string]string{"Ref": q.URL, "QueueUrl": q.URL, "Arn": q.ARN}
	}
	streamARNs := map[string]string{}
	for id, t := range stack.Tables {
		if t.Spec.StreamSpecification == nil {
			continue
		}
		d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
		if err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		streamARNs[id] = aws.ToString(d.Table.LatestStreamArn)
		tplOpts.Attributes[id] = map[string]string{"StreamArn": streamARNs[id]}
	}
	if stack, err = samtemplate.Load(o.Template, tplOpts); err != nil {
		return err
	}
	dc.stack = stack
	dc.log(log)
	if o.VisibilityTimeout > 0 {
		log.Warn("every queue's visibility timeout is replaced", "visibility_timeout", o.VisibilityTimeout.String())
	}

	// The functions.
	rie, err := RIEBinary(ctx)
	if err != nil {
		return err
	}
	b := o.Builder
	if b == nil {
		b = NewBuilder(filepath.Join(o.StateDir, "functions"))
	}
	fns := map[string]*Function{}
	defer func() {
		var wg sync.WaitGroup
		for _, f := range fns {
			wg.Go(f.Stop)
		}
		wg.Wait()
	}()
	for _, id := range stack.FunctionIDs() {
		f := stack.Functions[id]
		pkg, err := FunctionPackage(ctx, root, f)
		if err != nil {
			return err
		}
		t0 := time.Now()
		bootstrap, err := b.build(ctx, pkg)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		conc := functionConcurrency(f, o.DefaultConcurrency)
		cfgURL, err := dc.endpoint(ctx, id)
		if err != nil {
			return err
		}
		fn := newFunction(id, conc, f.Timeout, rie, bootstrap, functionEnv(f, env, cfgURL, tplOpts.Region), log, o.FunctionOutput)
		fn.onStart = o.OnInstanceStart
		fns[id] = fn
		rel, _ := filepath.Rel(root, pkg.Dir)
		log.Info("function built", "function", id, "package", rel, "tags", pkg.Tags, "timeout", f.Timeout.String(),
			"memory_mb", f.MemoryMB, "concurrency", conc, "build_ms", time.Since(t0).Milliseconds())
	}

	// The pollers and schedules.
	pctx, stopPollers := context.WithCancel(context.WithoutCancel(ctx))
	var pollers sync.WaitGroup
	defer func() { stopPollers(); pollers.Wait() }()
	for _, m := range stack.Streams {
		if !m.Settings.Enabled {
			continue
		}
		flt, err := parseFilter(m.Settings.Filters)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		p := &streamPoller{m: m, call: fns[m.Function].call, filter: flt, streams: streams, streamARN: streamARNs[m.Table], sqs: sqsClient,
			fnARN: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", tplOpts.Region, samtemplate.DefaultAccountID, stack.Functions[m.Function].Name), log: log}
		if m.Settings.OnFailure != "" {
			q := queues[m.Settings.OnFailure]
			p.onFailure = &q
		}
		pollers.Go(func() { p.run(pctx) })
		log.Info("stream mapping", "mapping", m.Name, "table", stack.Tables[m.Table].Name, "batch_size", m.Settings.BatchSize,
			"bisect", m.Settings.Bisect, "max_retries", m.Settings.MaxRetries, "max_record_age", m.Settings.MaxRecordAge.String(),
			"report_batch_item_failures", m.Settings.ReportBatchItemFailures, "filters", m.Settings.Filters, "on_failure", m.Settings.OnFailure)
	}
	for _, m := range stack.QueueMaps {
		if !m.Settings.Enabled {
			continue
		}
		flt, err := parseFilter(m.Settings.Filters)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		p := &queuePoller{m: m, fn: fns[m.Function], filter: flt, q: queues[m.Queue], region: tplOpts.Region, sqs: sqsClient, log: log}
		pollers.Go(func() { p.run(pctx) })
		q := stack.Queues[m.Queue]
		log.Info("queue mapping", "mapping", m.Name, "queue", q.Name, "batch_size", m.Settings.BatchSize,
			"concurrency", p.concurrency(), "visibility_timeout", queues[m.Queue].Visibility.String(),
			"dead_letter", q.DeadLetter, "max_receive_count", q.MaxReceiveCount, "report_batch_item_failures", m.Settings.ReportBatchItemFailures)
	}
	for _, s := range stack.Schedules {
		if !s.Enabled {
			continue
		}
		every, err := parseRate(s.Expression)
		always := runsAlways(stack.Functions[s.Function])
		switch d, ok := o.Schedules[s.Function]; {
		case ok:
			every, err = d, nil
		case o.ScheduleEvery > 0 && !always:
			every, err = o.ScheduleEvery, nil
		}
		if every < 0 {
			log.Warn("schedule turned off by the options", "schedule", s.Name, "function", s.Function)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sc := &scheduler{s: s, fn: fns[s.Function], every: every, region: tplOpts.Region, log: log,
			atStart: always}
		pollers.Go(func() { sc.run(pctx) })
		log.Info("schedule", "schedule", s.Name, "function", s.Function, "expression", s.Expression, "every", every.String(),
			"at_start", sc.atStart)
	}

	// The front door.
	if len(stack.Routes) == 0 {
		return errors.New("the template routes no HTTP API event to a function")
	}
	fd := &frontDoor{routes: stack.Routes, fns: fns, auth: cfg.Auth, region: tplOpts.Region, apiID: "emulated", log: log}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("EMULATE_ADDR %s: %w", o.Addr, err)
	}
	srv := &http.Server{Handler: fd, ReadHeaderTimeout: 10 * time.Second}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), IntegrationTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if len(cfg.Auth.Tokens) == 0 {
		log.Warn("no auth.tokens configured: every request is served as the single local admin user " + LocalUser)
	}
	if o.Templates != "" {
		if err := putTemplates(ctx, fd, o.Templates, log); err != nil {
			return err
		}
	}
	url := "http://" + ln.Addr().String()
	if o.Ready != nil {
		o.Ready(url)
	}
	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case err := <-srvDone:
		return fmt.Errorf("the front door stopped: %w", err)
	}
}

// LoadStack reads the template as the emulator runs it with cfg: the
// container: keys of cfg become the template parameters that the
// functions' environment takes them from (so what depends on the same
// parameter, such as reserved concurrency or a queue's maxReceiveCount,
// follows), then overrides win. It returns the stack and the parameters
// it was read with.
func LoadStack(template string, cfg *config.Config, opts samtemplate.Options, overrides map[string]string) (*samtemplate.Stack, map[string]string, error) {
	stack, err := samtemplate.Load(template, opts)
	if err != nil {
		return nil, nil, err
	}
	containerEnv := configEnv(cfg)
	params := map[string]string{}
	for _, id := range stack.FunctionIDs() {
		for v, param := range stack.Functions[id].EnvironmentParameters {
			val, ok := containerEnv[v]
			if !ok {
				continue
			}
			switch param.Suffix {
			case "":
				params[param.Name] = val
			case "s": // "${Seconds}s": a duration in whole seconds
				if d, err := time.ParseDuration(val); err == nil && d%time.Second == 0 {
					params[param.Name] = strconv.FormatInt(int64(d/time.Second), 10)
				}
			}
		}
	}
	for k, v := range overrides {
		params[k] = v
	}
	opts.Parameters = params
	if stack, err = samtemplate.Load(template, opts); err != nil {
		return nil, nil, err
	}
	return stack, params, nil
}

// configEnv is what the emulator takes from BERTH_CONFIG for the
// functions, as the environment variables that set it: the container: keys
// and auth's claim settings (auth.tokens are the front door's own and never
// reach a function).
func configEnv(cfg *config.Config) map[string]string {
	out := config.EnvValues(cfg, "container")
	for k, v := range config.EnvValues(cfg, "auth") {
		out[k] = v
	}
	return out
}

// functionEnv is what a function's runtime sees: Lambda's own variables,
// the emulated endpoints and dummy credentials, and the template's
// environment as it is, nothing more: the configuration reaches a function
// only as the template routes it (BERTH_CONFIG_PARAMETER,
// BERTH_CONFIG_SECRET), through cfgURL, its endpoint of SSM, Secrets
// Manager and EventBridge, which answers it only what its policies allow.
func functionEnv(f *samtemplate.Function, env map[string]string, cfgURL, region string) []string {
	vars := map[string]string{}
	for k, v := range f.Environment {
		vars[k] = v
	}
	for k, v := range map[string]string{
		"PATH": env["PATH"], "HOME": env["HOME"], "TZ": ":UTC",
		"AWS_REGION": region, "AWS_DEFAULT_REGION": region,
		"AWS_ACCESS_KEY_ID": "berth", "AWS_SECRET_ACCESS_KEY": "emulate", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_DYNAMODB": env["AWS_ENDPOINT_URL_DYNAMODB"], "AWS_ENDPOINT_URL_SQS": env["AWS_ENDPOINT_URL_SQS"],
		"AWS_ENDPOINT_URL_SSM": cfgURL, "AWS_ENDPOINT_URL_SECRETS_MANAGER": cfgURL,
		// The status changes' events go to the stand-in's bus, put only where the policies allow.
		"AWS_ENDPOINT_URL_EVENTBRIDGE":    cfgURL,
		"AWS_LAMBDA_FUNCTION_NAME":        f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     fmt.Sprint(int(f.Timeout / time.Second)),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(f.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.Name,
	} {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for _, k := range sortedKeys(vars) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// putTemplates puts every <name>.json of dir through the API function as
// the local admin, as `berth serve --templates` does.
func putTemplates(ctx context.Context, fd *frontDoor, dir string, log *slog.Logger) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var t container.Template
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("template %s: %w", file, err)
		}
		if t.Name == "" {
			t.Name = strings.TrimSuffix(filepath.Base(file), ".json")
		}
		path := "/api/templates/" + t.Name
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Host, req.RemoteAddr = "127.0.0.1", "127.0.0.1:0"
		route, params := fd.route(http.MethodPut, path)
		if route == nil {
			return fmt.Errorf("template %s: no route for PUT %s", file, path)
		}
		claims := map[string]string{"sub": "berth-emulate", fd.adminClaim(): "[" + fd.auth.AdminGroup + "]"}
		rec := &responseRecorder{header: http.Header{}}
		fd.serve(ctx, rec, route, fd.event(req, route, params, claims, raw))
		if rec.status != http.StatusOK && rec.status != http.StatusCreated {
			if why, ok := notRunnableHere(rec); ok {
				// A Kubernetes-only deployment cannot run a Docker template:
				// seed what it can run and say what was left out.
				log.Warn("template skipped: the deployment cannot run it", "template", t.Name, "file", file, "why", why)
				continue
			}
			return fmt.Errorf("template %s: PUT %s: %d %s", file, path, rec.status, rec.body.String())
		}
		log.Info("template put", "template", t.Name, "image", t.Image)
	}
	return nil
}

// notRunnableHere reports whether a refused template PUT was refused only
// for what the deployment lacks (its runtime, or a node with its
// host_labels) rather than for the template itself, and why.
func notRunnableHere(rec *responseRecorder) (string, bool) {
	if rec.status != http.StatusUnprocessableEntity {
		return "", false
	}
	var p struct {
		Errors []struct{ Field, Message string } `json:"errors"`
	}
	if err := json.Unmarshal(rec.body.Bytes(), &p); err != nil || len(p.Errors) == 0 {
		return "", false
	}
	var why []string
	for _, e := range p.Errors {
		if e.Field != "runtime" && e.Field != "scheduling.host_labels" {
			return "", false
		}
		why = append(why, e.Field+": "+e.Message)
	}
	return strings.Join(why, "; "), true
}

type responseRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *responseRecorder) WriteHeader(s int)           { r.status = s }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// functionConcurrency is how many instances of f run at once: its reserved
// concurrency, or def without one (UseReservedConcurrency=false deploys the
// CreateWorker so; its queue mapping's MaximumConcurrency then bounds the
// creates, see queuePoller.concurrency).
func functionConcurrency(f *samtemplate.Function, def int) int {
	if f.ReservedConcurrency > 0 {
		return f.ReservedConcurrency
	}
	return def
}
