package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// childEnv marks the test binary re-executed as `berth serve`: the tests
// run the real server as a process of its own, so that they can kill -9 it.
const childEnv = "BERTH_TEST_SERVE_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runServe(ctx, strings.Split(args, "\x1f"), os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

const (
	adminToken = "test-admin-token"
	aliceToken = "test-alice-token"
	bobToken   = "test-bob-token"
	carolToken = "test-carol-token"
	// engineToken is a service's: it may act on behalf of users.
	engineToken = "test-engine-token"
)

// serveEnv is one test's berth: its config, data dir, scope and engine.
type serveEnv struct {
	t       testing.TB
	dir     string
	cfgPath string
	scope   string
	addr    string
	image   string
	engine  *docker.Runtime
	kube    *kubernetes.Runtime // with serveOptions.kubernetes
	// hc checks every API exchange against docs/openapi.yaml.
	hc   *http.Client
	proc *exec.Cmd
	logs *testenv.SyncBuffer // this run's stderr
	// allLogs is every run's stderr, for a test that kills and restarts
	// the server and must show what the runs before the last one did.
	allLogs testenv.SyncBuffer
	out     *testenv.SyncBuffer // stdout: the start-up summary
	exited  chan struct{}
	// env is more environment for `berth serve` ("KEY=value" each), set
	// before start: a test that configures berth through its environment
	// this way, not with t.Setenv, may run beside others (t.Parallel).
	env []string
}

type serveOptions struct {
	maxConcurrency, maxPending  int
	orphanGrace, reconcileEvery time.Duration
	// downHost adds a second Docker host where no engine listens.
	downHost bool
	// noTokens leaves auth.tokens out: the local admin mode.
	noTokens bool
	// teams puts alice and carol in team "data" (their tokens name it).
	teams bool
	// extra is appended to config.yml (whole top-level sections).
	extra string
	// containerKeys are more `container:` lines ("key: value\n" each).
	containerKeys string
	// noImageRefresh sets refresh_image_status_on_start to false.
	noImageRefresh bool
	// kubernetes adds the test cluster (scripts/testenv/kubernetes.sh) as
	// cluster "k1" and allows runtime kubernetes.
	kubernetes         bool
	createStartTimeout time.Duration
	// maxAttempts is container.max_attempts (default 5).
	maxAttempts int
	// dockerEndpoint is the engine endpoint berth is configured with, when
	// it must differ from the real engine the test itself talks to (a
	// fault-injecting proxy in front of it).
	dockerEndpoint string
	// bindRoots is the Docker host's allowed_bind_roots.
	bindRoots []string
	// publishing puts the Docker host on a network that publishes ports on
	// 127.0.0.1 (dockertest.PublishingNetwork), advertised as 127.0.0.1.
	publishing bool
	// simHosts, when set, are berth's only Docker hosts (a simulated fleet,
	// dockersim, for the benchmarks at a platform's size): no real engine
	// is needed, and the test image is simImage.
	simHosts []config.DockerHost
}

// simImage is the image the benchmarks' simulated fleets hold.
const simImage = "berth.test/sim:1"

func newServeEnv(t testing.TB, o serveOptions) *serveEnv {
	t.Helper()
	endpoint, image := "", simImage
	if o.simHosts == nil {
		endpoint, image = testenv.DockerHost(t), testenv.TestImage(t)
	}
	if o.maxConcurrency == 0 {
		o.maxConcurrency = 3
	}
	if o.maxPending == 0 {
		o.maxPending = 50
	}
	if o.orphanGrace == 0 {
		o.orphanGrace = 5 * time.Minute
	}
	if o.reconcileEvery == 0 {
		o.reconcileEvery = 30 * time.Second
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 5
	}
	if o.dockerEndpoint == "" {
		o.dockerEndpoint = endpoint
	}
	e := &serveEnv{t: t, dir: t.TempDir(), scope: "serve-" + strings.ToLower(container.NewID()), image: image,
		hc: &http.Client{Transport: apicontract.Transport(t, nil)}}
	e.cfgPath = filepath.Join(e.dir, "config.yml")
	extraContainer, kubeSection := "", ""
	if o.createStartTimeout > 0 {
		extraContainer += fmt.Sprintf("  create_start_timeout: %s\n", o.createStartTimeout)
	}
	if o.kubernetes {
		extraContainer += "  allowed_runtimes: [docker, kubernetes]\n"
		kubeSection = fmt.Sprintf("kubernetes:\n  clusters:\n    - {name: k1, kubeconfig: %q, namespace: %s}\n",
			testenv.Kubeconfig(t), testenv.KubeNamespace(t))
	}
	cfg := fmt.Sprintf(`container:
%s  create_queue_max_concurrency: %d
  create_queue_max_pending: %d
  stop_grace_period: 1s
  orphan_grace: %s
  reconcile_every: %s
  max_attempts: %d
  outbox_sweep_after: 2s
  refresh_image_status_on_start: %t
%s%s
docker:
  scope: %s
  hosts:
    - name: local
      endpoint: %s
      network_mode: none
`, extraContainer, o.maxConcurrency, o.maxPending, o.orphanGrace, o.reconcileEvery, o.maxAttempts, !o.noImageRefresh, indent(o.containerKeys),
		authSection(o.noTokens, o.teams), e.scope, o.dockerEndpoint)
	if len(o.bindRoots) > 0 {
		cfg += fmt.Sprintf("      allowed_bind_roots: [%s]\n", strings.Join(o.bindRoots, ", "))
	}
	if o.publishing {
		cfg = strings.Replace(cfg, "      network_mode: none\n", "      network_mode: "+dockertest.PublishingNetwork(t, endpoint)+"\n      advertise_address: 127.0.0.1\n", 1)
	}
	if o.downHost {
		cfg += "    - name: gone\n      endpoint: tcp://" + testenv.FreeAddr(t) + "\n      network_mode: none\n"
	}
	if o.simHosts != nil {
		before, _, _ := strings.Cut(cfg, "    - name: local\n")
		cfg = before + simHostsYAML(o.simHosts)
	}
	cfg += kubeSection + o.extra
	if err := os.WriteFile(e.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(e.cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.simHosts == nil {
		// The test's own view of the engine is direct, past any proxy.
		c.Docker.Hosts[0].Endpoint = endpoint
	}
	e.engine, err = docker.New(c.Docker, docker.Options{Scope: e.scope})
	if err != nil {
		t.Fatal(err)
	}
	if e.kube, err = kubernetes.FromConfig(c, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, _ := e.engine.List(ctx)
		// A few deletes at a time: a burst test leaves 50 containers,
		// which one by one took half a minute on a loaded machine.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, st := range states {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				_ = e.engine.Delete(ctx, st.Ref)
			}()
		}
		wg.Wait()
		e.engine.Close()
		if e.kube != nil {
			pods, _ := e.kube.List(ctx)
			for _, st := range pods {
				_ = e.kube.Delete(ctx, st.Ref)
			}
		}
	})
	return e
}

// simHostsYAML lists simulated hosts as docker.hosts entries.
func simHostsYAML(hosts []config.DockerHost) string {
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "    - {name: %s, endpoint: %q, network_mode: none}\n", h.Name, h.Endpoint)
	}
	return b.String()
}

func authSection(none, teams bool) string {
	if none {
		return "auth: {}"
	}
	team := ""
	if teams {
		team = ", team: data"
	}
	return fmt.Sprintf("auth:\n  tokens:\n    %s: {user: root, admin: true}\n    %s: {user: alice%s}\n    %s: {user: bob}\n    %s: {user: carol%s}\n    %s: {user: engine, on_behalf_of: true}",
		adminToken, aliceToken, team, bobToken, carolToken, team, engineToken)
}

// start runs `berth serve` and waits until it answers /readyz. An address
// it picks (e.addr empty) was free when asked, not necessarily when the
// child binds it: another test's process may take it in between, and then
// another address is picked, a few times at most.
func (e *serveEnv) start() {
	e.t.Helper()
	for attempt := 1; ; attempt++ {
		picked := e.addr == ""
		if picked {
			e.addr = testenv.FreeAddr(e.t)
		}
		if e.launch() {
			break
		}
		if !picked || attempt == 3 || !strings.Contains(e.logs.String(), "address already in use") {
			e.t.Fatalf("berth serve exited at start: %s", e.logs)
		}
		e.t.Logf("%s was taken before berth serve could listen on it; picking another", e.addr)
		e.addr = ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + e.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("berth serve never became healthy: %v %s", err, e.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launch starts the `berth serve` child on e.addr and waits for it to say
// it listens; false when it exited first (e.logs says why).
func (e *serveEnv) launch() bool {
	e.t.Helper()
	args := []string{"--config", e.cfgPath, "--addr", e.addr, "--data", filepath.Join(e.dir, "data")}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), e.env...), childEnv+"="+strings.Join(args, "\x1f"))
	e.logs = &testenv.SyncBuffer{}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.MultiWriter(e.logs, &e.allLogs)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	exited := make(chan struct{})
	ready := make(chan string, 1)
	out := &testenv.SyncBuffer{}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if strings.HasPrefix(sc.Text(), "berth serve: API on ") {
				ready <- sc.Text()
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-ready:
	case <-exited:
		return false
	case <-time.After(60 * time.Second):
		e.t.Fatalf("berth serve did not start: %s", e.logs)
	}
	e.proc, e.exited, e.out = cmd, exited, out
	return true
}

// kill ends the server with SIGKILL: nothing gets to clean up.
func (e *serveEnv) kill() {
	e.t.Helper()
	if e.proc == nil {
		return
	}
	_ = e.proc.Process.Kill()
	<-e.exited
	e.proc = nil
}

// stop ends the server with SIGTERM and waits for a clean exit.
func (e *serveEnv) stop() {
	if e.proc == nil {
		return
	}
	_ = e.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(60 * time.Second):
		_ = e.proc.Process.Kill()
		<-e.exited
		e.t.Errorf("berth serve did not stop within 60s of SIGTERM")
	}
	if code := e.proc.ProcessState.ExitCode(); code != 0 {
		e.t.Errorf("berth serve exited %d after SIGTERM: %s", code, e.logs)
	}
	e.proc = nil
}

type apiResp struct {
	status int
	body   []byte
	header http.Header
}

func (e *serveEnv) call(method, path, token string, body any) apiResp {
	e.t.Helper()
	r, err := e.do(method, path, token, body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// do is call for callers that expect the server to be unreachable at times
// (it may be killed): the error is theirs to count, and do is safe to use
// from any goroutine.
func (e *serveEnv) do(method, path, token string, body any) (apiResp, error) {
	var rdr io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rdr = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+e.addr+path, rdr)
	if err != nil {
		return apiResp{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return apiResp{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return apiResp{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return apiResp{status: resp.StatusCode, body: b, header: resp.Header}, nil
}

func (e *serveEnv) must(r apiResp, want int) apiResp {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
	return r
}

func (e *serveEnv) instance(r apiResp) container.Instance {
	e.t.Helper()
	var in container.Instance
	if err := json.Unmarshal(r.body, &in); err != nil {
		e.t.Fatalf("decoding instance: %v: %s", err, r.body)
	}
	return in
}

func (e *serveEnv) putTemplates() {
	e.t.Helper()
	for name, script := range map[string]string{"sleeper": "exec sleep 3600", "ok": "exit 0", "bad": "exit 3"} {
		e.must(e.call("PUT", "/api/templates/"+name, adminToken, container.Template{Runtime: "docker", Image: e.image,
			PullPolicy: container.PullNever, Command: []string{"sh", "-c", script}}), http.StatusCreated)
	}
}

func (e *serveEnv) create(tpl string) container.Instance {
	e.t.Helper()
	return e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": tpl}), http.StatusAccepted))
}

// waitFor waits (through the API's own wait) until the instance has want.
func (e *serveEnv) waitFor(id string, want fsm.Status, within time.Duration) container.Instance {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := e.call("GET", "/api/containers/"+id+"/wait?status="+string(want)+"&timeout=20s", aliceToken, nil)
		if r.status == http.StatusOK {
			return e.instance(r)
		}
		if r.status != http.StatusRequestTimeout || time.Now().After(deadline) {
			e.t.Fatalf("waiting for %s to be %s: %d %s\nserver log:\n%s", id, want, r.status, r.body, tail(e.logs.String(), 4000))
		}
	}
}

// containers returns the engine's containers of this test's scope.
func (e *serveEnv) containers() []runtime.State {
	e.t.Helper()
	states, err := e.engine.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return states
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// indent puts each line of keys under the container section.
func indent(keys string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(keys), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}
