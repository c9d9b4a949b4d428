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
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
// functions, as the environment variables that set it: the container: keys,
// auth's claim settings (auth.tokens are the front door's own and never
// reach a function) and the fleet: keys (fleet.shards is FleetShards).
func configEnv(cfg *config.Config) map[string]string {
	out := config.EnvValues(cfg, "container")
	for _, sec := range []string{"auth", "fleet"} {
		for k, v := range config.EnvValues(cfg, sec) {
			out[k] = v
		}
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
