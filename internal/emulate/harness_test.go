package emulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"gopkg.in/yaml.v3"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// templatePath is the repository's template.yaml: the tests emulate the
// stack that is deployed.
const templatePath = "../../template.yaml"

// Tokens of the tests' config (auth.tokens).
const (
	adminToken = "admin-token-0123456789"
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
	// carolToken and engineToken are in the config of a setup with quotas.
	carolToken  = "carol-token-0123456789"
	engineToken = "engine-token-0123456789"
)

var (
	buildsOnce sync.Once
	builds     *emulate.Builder
	buildsDir  string
	buildsErr  error
)

// builder is shared by every stack of the test binary: each function is
// built once, before any test runs (TestMain, prebuild).
func builder(t testing.TB) *emulate.Builder {
	buildsOnce.Do(newBuilder)
	if buildsErr != nil {
		t.Fatalf("the stacks' builds: %v", buildsErr)
	}
	return builds
}

func newBuilder() {
	if buildsDir, buildsErr = os.MkdirTemp("", "berth-emulate-builds-"); buildsErr == nil {
		builds = emulate.NewBuilder(buildsDir)
	}
}

// prebuild builds every function of the template's stack (the watcher's
// too), the Runtime Interface Emulator and the berth CLI, once, before any
// test starts: builds take what the machine and its caches make them take
// (minutes when cold on a loaded 2-core machine), so none runs inside a
// test's bounded wait; the suite's -timeout alone bounds them. An error is
// kept for the tests that start a stack (builder), not fatal to the others.
func prebuild() {
	buildsOnce.Do(newBuilder)
	if buildsErr != nil {
		return
	}
	t0 := time.Now()
	buildsErr = builds.Prebuild(context.Background(), templatePath, map[string]string{"RuntimeWatcher": "true"})
	if buildsErr == nil {
		berthBinOnce.Do(buildBerthCLI)
	}
	fmt.Fprintf(os.Stderr, "emulate tests: the stack's functions and the berth CLI built in %.1fs (err: %v)\n",
		time.Since(t0).Seconds(), buildsErr)
}

// TestMain builds what the stacks need (prebuild, unless -short), then
// runs the package's tests. Every test calls t.Parallel but those
// that bound how late something happens or is noticed (TestExitNoticed,
// the watcher tests, TestFunctionUnderRIE's timeout) and
// those too short to matter: go test runs the sequential ones first, one
// at a time, so that no other test's load is in what they measure, then
// the parallel ones side by side (-parallel, GOMAXPROCS by default), where
// one test's waits on queues, schedules and timeouts leave the CPU to the
// others.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		prebuild()
	}
	code := m.Run()
	if buildsDir != "" {
		_ = os.RemoveAll(buildsDir)
	}
	os.Exit(code)
}

// setup is what a test changes in the emulated stack.
type setup struct {
	// container: keys of BERTH_CONFIG.
	container map[string]any
	// dockerEndpoint replaces the test engine (a fault proxy in front of it).
	dockerEndpoint string
	scheduleEvery  time.Duration
	visibility     time.Duration
	params         map[string]string
	// meter puts an awsMeter between the stack and DynamoDB Local and the
	// SQS emulator (stack.meter).
	meter bool
	// onInvoke, if set, is told of every invocation as it ends.
	onInvoke func(fn string, instance int)
	// kubernetesOnly configures the test cluster (scripts/testenv/kubernetes.sh)
	// as cluster "k1", no Docker host, and allowed_runtimes [kubernetes].
	kubernetesOnly bool
	// templates is emulate.Options.Templates: a directory seeded at start.
	templates string
	// watcher deploys the watcher function (RuntimeWatcher); without it the
	// stack has none, so that what a test measures of the reconciler is
	// the reconciler's.
	watcher bool
	// schedules is emulate.Options.Schedules (a negative period turns a
	// function's schedule off).
	schedules map[string]time.Duration
	// publishing puts the Docker host on a network that publishes ports on
	// 127.0.0.1 (dockertest.PublishingNetwork), advertised as 127.0.0.1.
	publishing bool
	// aws, if set, is given the DynamoDB and SQS endpoints the stack would
	// use and returns the ones it uses instead (a fault proxy in front).
	aws func(ddbURL, sqsURL string) (string, string)
	// webhooks: keys of BERTH_CONFIG's webhooks section (allowed_networks).
	webhooks map[string]any
	// quotas: BERTH_CONFIG's quotas section. With it, alice and carol are of
	// team data (auth.team_claim) and engine may act on behalf of users
	// (auth.on_behalf_of_claim), as the front door's tokens say.
	quotas map[string]any
}

// stack is one emulated stack, running in the test.
type stack struct {
	t       testing.TB
	url     string
	name    string
	scope   string
	logs    *testenv.SyncBuffer
	ddb     *dynamodb.Client
	sqs     *sqs.Client
	cfgPath string
	params  map[string]string
	// rt sees the stack's containers (its docker scope) on the real engine;
	// nil with setup.kubernetesOnly.
	rt *docker.Runtime
	// kube sees the stack's Pods on the test cluster (setup.kubernetesOnly).
	kube *kubernetes.Runtime
	// meter counts what the stack asks of DynamoDB and SQS (setup.meter).
	meter *awsMeter

	mu   sync.Mutex
	pids map[string][]int
	// stop ends the emulator (its functions, schedules and queues' pollers),
	// as the end of the test does; the tables stay.
	stop func()
}

// start runs the emulator on the repository's template with DynamoDB Local
// and the SQS emulator of `make test`, a test Docker engine in a scope of
// its own, and the tests' tokens; it returns once the API is up.
//
// Stacks share nothing but the builds: each has its own name (so its own
// tables, queues and Docker or Kubernetes scope), listens on a port the
// kernel picks and counts only its own processes and containers, so the
// tests that drive one may run side by side (t.Parallel, see TestMain);
// most of their time is spent waiting on queues, schedules and timeouts.
func start(t testing.TB, s setup) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the whole stack; skipped with -short")
	}
	ddbURL := testenv.DynamoDBEndpoint(t)
	sqsURL := testenv.SQSEndpoint(t)
	var dockerHost, kubeconfig, kubeNamespace string
	if s.kubernetesOnly {
		kubeconfig, kubeNamespace = testenv.Kubeconfig(t), testenv.KubeNamespace(t)
	} else {
		dockerHost = testenv.DockerHost(t)
		testenv.TestImage(t)
	}
	if _, err := emulate.RIEBinary(context.Background()); err != nil {
		testenv.Missing(t, "the Lambda Runtime Interface Emulator", err.Error())
	}
	if _, err := os.Stat(templatePath); err != nil {
		t.Fatalf("the repository's template.yaml: %v", err)
	}
	st := &stack{t: t, name: "t" + strings.ToLower(container.NewID()[14:]), logs: &testenv.SyncBuffer{}, pids: map[string][]int{}}
	st.scope = st.name
	endpoint := dockerHost
	if s.dockerEndpoint != "" {
		endpoint = s.dockerEndpoint
	}
	host := map[string]any{"name": "local", "endpoint": endpoint, "network_mode": "none"}
	if s.publishing {
		host["network_mode"], host["advertise_address"] = dockertest.PublishingNetwork(t, dockerHost), "127.0.0.1"
	}
	cfg := map[string]any{
		"container": s.container,
		"docker":    map[string]any{"scope": st.scope, "hosts": []any{host}},
		"auth": map[string]any{"tokens": map[string]any{
			adminToken: map[string]any{"user": "admin", "admin": true},
			aliceToken: map[string]any{"user": "alice"},
			bobToken:   map[string]any{"user": "bob"},
		}},
	}
	if s.webhooks != nil {
		cfg["webhooks"] = s.webhooks
	}
	if s.quotas != nil {
		cfg["quotas"] = s.quotas
		cfg["auth"] = map[string]any{"team_claim": "berth_team", "on_behalf_of_claim": "berth_on_behalf_of", "tokens": map[string]any{
			adminToken:  map[string]any{"user": "admin", "admin": true},
			aliceToken:  map[string]any{"user": "alice", "team": "data"},
			bobToken:    map[string]any{"user": "bob"},
			carolToken:  map[string]any{"user": "carol", "team": "data"},
			engineToken: map[string]any{"user": "engine", "on_behalf_of": true},
		}}
	}
	if s.kubernetesOnly {
		cfg["docker"] = map[string]any{"scope": st.scope}
		cfg["kubernetes"] = map[string]any{"clusters": []any{map[string]any{
			"name": "k1", "kubeconfig": kubeconfig, "namespace": kubeNamespace}}}
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// Tables of their own: the template names them by its TablePrefix.
	// FleetShards 1 unless a test says otherwise: the one-host stacks never fan
	// out, and the loops keep the reservations (reconciler 1, watcher 2) the
	// tests' timings were written against.
	params := map[string]string{"TablePrefix": st.name + "-", "RuntimeWatcher": strconv.FormatBool(s.watcher), "FleetShards": "1"}
	for k, v := range s.params {
		params[k] = v
	}
	st.cfgPath, st.params = cfgPath, params
	stackDDB, stackSQS := ddbURL, sqsURL
	if s.meter {
		st.meter = newAWSMeter(t, ddbURL, sqsURL, params["TablePrefix"])
		stackDDB, stackSQS = st.meter.ddbURL, st.meter.sqsURL
	}
	if s.aws != nil {
		stackDDB, stackSQS = s.aws(stackDDB, stackSQS)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"AWS_ENDPOINT_URL_DYNAMODB=" + stackDDB, "AWS_ENDPOINT_URL_SQS=" + stackSQS, "AWS_REGION=us-east-1"}
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- emulate.Run(ctx, emulate.Options{
			Template: templatePath, ConfigFile: cfgPath, Addr: "127.0.0.1:0", StackName: st.name,
			Parameters: params, ScheduleEvery: s.scheduleEvery, Schedules: s.schedules, VisibilityTimeout: s.visibility,
			Builder: builder(t), Env: env, StateDir: t.TempDir(), Templates: s.templates,
			Logger:         slog.New(invokeHook{Handler: slog.NewJSONHandler(st.logs, nil), on: s.onInvoke}),
			FunctionOutput: st.logs,
			Ready:          func(u string) { ready <- u },
			OnInstanceStart: func(fn string, pid int) {
				st.mu.Lock()
				st.pids[fn] = append(st.pids[fn], pid)
				st.mu.Unlock()
			},
		})
	}()
	var stopOnce sync.Once
	st.stop = func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("emulator: %v", err)
				}
			case <-time.After(90 * time.Second):
				t.Errorf("the emulator did not stop within 90s")
			}
		})
	}
	t.Cleanup(func() {
		st.stop()
		// Under `make test` the functions run under the race detector
		// (emulate.Builder), which reports in their output and goes on.
		out := st.logs.String()
		if i := strings.Index(out, "WARNING: DATA RACE"); i >= 0 {
			report := out[i:]
			t.Errorf("a function of the stack raced:\n%s", report[:min(len(report), 8000)])
		}
		if t.Failed() {
			t.Logf("emulator output (tail, without the RIE's per-invocation lines and the metrics):\n%s", tail(withoutBookkeeping(st.logs.String()), 16000))
		}
	})
	select {
	case st.url = <-ready:
	case err := <-done:
		t.Fatalf("the emulator stopped before it was ready: %v\n%s", err, tail(st.logs.String(), 8000))
	case <-testenv.BeforeDeadline(t):
		// The builds are done (prebuild): what is left of a start is
		// tables, queues and processes, whose time is the machine's.
		t.Fatalf("the emulator was not ready by the test binary's deadline:\n%s", tail(st.logs.String(), 8000))
	}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("berth", "test", "")}
	st.ddb = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(ddbURL)
		o.DisableValidateResponseChecksum = true
	})
	st.sqs = sqs.NewFromConfig(awsCfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsURL) })
	if s.kubernetesOnly {
		st.kube = kubeRuntime(t, st.scope, kubeconfig, kubeNamespace)
		return st
	}
	rt, err := docker.New(config.Docker{Scope: st.scope, Hosts: []config.DockerHost{{Name: "local", Endpoint: dockerHost, NetworkMode: "none"}}},
		docker.Options{Scope: st.scope, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st.rt = rt
	t.Cleanup(func() { // after the emulator stopped (cleanups run last first)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, err := rt.List(ctx)
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, s := range states {
			if err := rt.Delete(ctx, s.Ref); err != nil {
				t.Errorf("cleanup: delete %s: %v", s.Name, err)
			}
		}
		rt.Close()
	})
	st.putTemplate("busybox", []string{"sh", "-c", "exec sleep 3600"})
	return st
}

// bookkeeping are the marks of the emulator output's lines that say
// nothing a failure is read for: the RIE's per-invocation lines and the
// functions' metric documents. A failing test's log shows what is left, so
// that its tail reaches back to the requests and transitions before the
// failure (a minute of RIE lines was the whole tail of a 12 kB one).
var bookkeeping = []string{"(rapid) INVOKE ", "] START RequestId: ", "] END RequestId: ", "] REPORT RequestId: ", `{"CloudWatchMetrics":`}

// withoutBookkeeping is out without its bookkeeping lines.
func withoutBookkeeping(out string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if !slices.ContainsFunc(bookkeeping, func(mark string) bool { return strings.Contains(line, mark) }) {
			b.WriteString(line)
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// response is one answer of the front door.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
	return m
}

// do sends one request to the front door.
func (st *stack) do(method, path, token string, body any) response {
	st.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, st.url+path, rd)
	if err != nil {
		st.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		st.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (st *stack) putTemplate(name string, cmd []string) {
	st.t.Helper()
	img := os.Getenv(testenv.EnvTestImage)
	r := st.do(http.MethodPut, "/api/templates/"+name, adminToken, map[string]any{
		"runtime": "docker", "image": img, "pull_policy": "IfNotPresent", "command": cmd})
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		st.t.Fatalf("PUT template %s: %d %s", name, r.status, r.body)
	}
}

// create creates a container as token's user and returns its id.
func (st *stack) create(token, template, name string) string {
	st.t.Helper()
	r := st.do(http.MethodPost, "/api/containers", token, map[string]any{"template": template, "name": name})
	if r.status != http.StatusAccepted {
		st.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.json(st.t)["id"].(string)
}

// wait waits until the container has the status (or gives up after
// timeout) and returns it as the API shows it.
func (st *stack) wait(token, id, status string, timeout time.Duration) map[string]any {
	st.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left > 20*time.Second {
			left = 20 * time.Second
		}
		if left < time.Second {
			left = time.Second
		}
		r := st.do(http.MethodGet, fmt.Sprintf("/api/containers/%s/wait?status=%s&timeout=%s", id, status, left.Round(time.Second)), token, nil)
		if r.status == http.StatusOK {
			m := r.json(st.t)
			if m["status"] == status {
				return m
			}
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("container %s: not %s after %v: %d %s", id, status, timeout, r.status, r.body)
		}
	}
}

// functionPIDs returns the RIE processes started for a function.
func (st *stack) functionPIDs(fn string) []int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]int(nil), st.pids[fn]...)
}

// dockerProxy is a fault injector in front of the test engine: every
// request goes through to the real engine unless fault says otherwise.
// It returns the proxy's endpoint (unix://…).
func dockerProxy(t *testing.T, fault func(r *http.Request) (delay time.Duration, fail bool)) string {
	t.Helper()
	target := strings.TrimPrefix(testenv.DockerHost(t), "unix://")
	dir, err := os.MkdirTemp("", "bp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1, // event streams pass through at once
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delay, fail := fault(r)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if fail {
			// An answer the client cannot read: a failure that is neither
			// the engine being unavailable (which berth retries without
			// spending attempts) nor a spec it refuses, so each delivery
			// spends one attempt until the dead-letter queue.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `injected fault`)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}
