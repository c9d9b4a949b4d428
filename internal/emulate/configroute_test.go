package emulate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/samtemplate"
	"github.com/berth-io/berth/internal/wiring"
)

// routeDoc sets every key of the sections a deployment configures to
// other than its default (TestConfigReachesEveryFunction checks that it
// does, so a new key must be added here), the nodes with their roots and
// labels, and secret material.
const routeDoc = `container:
  refresh_image_status_on_start: false
  recover_running_dag_on_start: false
  cleanup_dag_node_containers_before_start: false
  delete_container_on_node_success: false
  dag_node_cleanup_on_failed: delete
  dag_node_cleanup_on_dag_finished: stop
  create_queue_max_concurrency: 7
  create_queue_max_pending: 17
  create_queue_max_pending_per_owner: 5
  create_start_timeout: 2m
  max_attempts: 9
  unavailable_retry_for: 3h
  stop_grace_period: 4s
  workspace_root: /data/workspaces
  outbox_sweep_after: 45s
  reconcile_every: 11s
  orphan_grace: 7m
  allowed_runtimes: [docker, kubernetes]
  default_lifetime: 45m
  max_lifetime: 6h
  stopped_retention: 36h
  failed_retention: 240h
webhooks:
  allowed_networks: [10.20.0.0/16]
server:
  addr: 127.0.0.1:9999
  data_dir: /var/lib/berth-route
  request_body_limit: 1000
  wait_max: 20s
  metrics: stdout
  max_waiters: 100
  max_waiters_per_caller: 10
  max_follows: 40
  max_follows_per_caller: 6
  exec_max_timeout: 19s
  max_execs_per_owner: 3
  max_execs_per_container: 1
  exec_output_limit: 4096
  read_header_timeout: 5s
  read_timeout: 21s
  write_timeout: 50s
  idle_timeout: 1m
  max_header_bytes: 16384
auth:
  admin_claim: groups
  admin_group: ops
  team_claim: org
  on_behalf_of_claim: custom:berth_service
  tokens:
    tok-route-admin: {user: admin, admin: true}
docker:
  scope: route
  hosts:
    - name: h1
      endpoint: tcp://10.1.2.3:2376
      allowed_bind_roots: [/srv/data]
      labels: {zone: a}
      capacity: 3
      tls:
        ca: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----"
        cert: "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----"
        key: "-----BEGIN PRIVATE KEY-----\nROUTEKEY\n-----END PRIVATE KEY-----"
    - name: h2
      endpoint: unix:///run/h2.sock
      allowed_bind_roots: [/srv/cache]
  registries:
    - {host: ghcr.io, username: bot, password: ROUTEPW}
quotas:
  default: {instances: 40, running: 8, pending: 4, cpus: 6, memory: 12Gi}
fleet:
  shards: 3
  period: 2m
kubernetes:
  clusters:
    - name: k1
      eks_cluster: apps
      region: eu-west-1
      namespace: jobs
      allowed_host_path_roots: [/mnt/k]
      labels: {gpu: "yes"}
`

// routeFunctions are the template's functions: what each is told as
// wiring.LoadFunctionConfig's function, and whether it needs both queues.
var routeFunctions = map[string]struct {
	kind    string
	withSQS bool
}{
	"ApiFunction": {wiring.FunctionAPI, false}, "DispatcherFunction": {"dispatcher", true},
	"CreateWorkerFunction": {"worker", true}, "LifecycleWorkerFunction": {"worker", true}, "ReconcilerFunction": {"reconciler", false},
	"LogsFunction": {"logs", false}, "WatcherFunction": {"watcher", false}, "NotifyFunction": {wiring.FunctionNotify, false},
	"ExecFunction": {"exec", false},
}

// The functions that read the configuration document (the parameter), and
// those that read its secret material too.
var (
	documentReaders = []string{"ApiFunction", "CreateWorkerFunction", "LifecycleWorkerFunction", "ReconcilerFunction", "LogsFunction", "WatcherFunction",
		"NotifyFunction", "ExecFunction"}
	secretReaders = []string{"CreateWorkerFunction", "LifecycleWorkerFunction", "ReconcilerFunction", "LogsFunction", "WatcherFunction", "ExecFunction"}
)

// stackOwned are the keys of those sections that the stack decides, not
// the document: the console's sign-in provider is the identity provider
// the stack made (or JwtIssuer), given by template.yaml to the api
// function, the one that serves the console.
var stackOwned = map[string][]string{
	"BERTH_AUTH_OIDC_ISSUER":    {"ApiFunction"},
	"BERTH_AUTH_OIDC_CLIENT_ID": {"ApiFunction"},
	// Each loop's shard queue is the stack's, given to that loop alone.
	"BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL": {"ReconcilerFunction"},
	"BERTH_FLEET_WATCH_SHARD_QUEUE_URL":     {"WatcherFunction"},
}

// TestConfigReachesEveryFunction is the key × function table: one
// configuration, set through the deploy inputs as the emulator sets them
// (BERTH_CONFIG split into the parameter and the secret, its container:
// keys into the template parameters that carry them), loaded by every
// function of template.yaml the way its setup loads it, from exactly the
// environment the emulator gives it and through the stand-in that answers
// it as its policies allow. Every key reaches every function that reads
// the document with the same value; secret material reaches only the
// functions that read the secret; the dispatcher, which reads no document,
// gets only what its own environment says. (The CDK app gives the same
// environment and policies: infra's parity test, with a parameter.)
func TestConfigReachesEveryFunction(t *testing.T) {
	t.Parallel()
	const region, stackName = "eu-west-1", "route"
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(routeDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("the table's document: %v", err)
	}
	dc, err := newDeployConfig(path, stackName, region)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.close()
	stack, _, err := LoadStack("../../template.yaml", want, samtemplate.Options{StackName: stackName, Region: region}, dc.parameters())
	if err != nil {
		t.Fatal(err)
	}
	dc.stack = stack
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	got := map[string]*config.Config{}
	envs := map[string]map[string]string{}
	for _, id := range stack.FunctionIDs() {
		fn, ok := routeFunctions[id]
		if !ok {
			t.Fatalf("%s: a function the table does not know", id)
		}
		url, err := dc.endpoint(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range functionEnv(stack.Functions[id], map[string]string{}, url, region) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		envs[id] = env
		c, err := wiring.LoadFunctionConfig(context.Background(), fn.kind, fn.withSQS,
			func(k string) (string, bool) { v, ok := env[k]; return v, ok }, readersAt(env), logger)
		if err != nil {
			t.Fatalf("%s: its configuration does not load: %v", id, err)
		}
		got[id] = c.Config
	}

	def := config.Default()
	type row struct {
		key     string
		value   func(*config.Config) string
		readers []string
	}
	var rows []row
	// Every scalar key of the sections the deployment configures.
	for _, sec := range []string{"container", "server", "auth", "fleet"} {
		wantVals, defVals := config.EnvValues(want, sec), config.EnvValues(def, sec)
		for _, name := range mapKeys(wantVals) {
			if only, owned := stackOwned[name]; owned {
				for _, id := range stack.FunctionIDs() {
					if _, given := envs[id][name]; given != slices.Contains(only, id) {
						t.Errorf("%s × %s: given by the template = %v, want %v", name, id, given, !given)
					}
				}
				continue
			}
			if wantVals[name] == defVals[name] {
				t.Errorf("%s: routeDoc leaves it at its default (%q): set it, or the table cannot see where it goes", name, defVals[name])
			}
			readers := slices.Clone(documentReaders)
			if _, ok := envs["DispatcherFunction"][name]; ok {
				readers = append(readers, "DispatcherFunction") // a template parameter, in Globals
			}
			rows = append(rows, row{key: name, readers: readers, value: func(c *config.Config) string { return config.EnvValues(c, sec)[name] }})
		}
	}
	rows = append(rows,
		row{key: "docker.hosts (names, endpoints, roots, labels, capacity)", readers: documentReaders, value: func(c *config.Config) string {
			var out []string
			for _, h := range c.Docker.Hosts {
				out = append(out, fmt.Sprint(h.Name, h.Endpoint, h.AllowedBindRoots, h.Labels, h.Capacity))
			}
			return strings.Join(out, "; ")
		}},
		row{key: "quotas.default", readers: documentReaders, value: func(c *config.Config) string { return fmt.Sprintf("%+v", c.Quotas.Default) }},
		row{key: "webhooks.allowed_networks", readers: documentReaders, value: func(c *config.Config) string { return fmt.Sprint(c.Webhooks.AllowedNetworks) }},
		row{key: "docker.bind roots", readers: documentReaders, value: func(c *config.Config) string { return fmt.Sprint(c.Docker.BindRoots()) }},
		row{key: "kubernetes.clusters", readers: documentReaders, value: func(c *config.Config) string { return fmt.Sprintf("%+v", c.Kubernetes.Clusters) }},
		row{key: "docker.hosts[0].tls.key (secret)", readers: secretReaders, value: func(c *config.Config) string {
			if len(c.Docker.Hosts) == 0 || c.Docker.Hosts[0].TLS == nil {
				return ""
			}
			return c.Docker.Hosts[0].TLS.Key
		}},
		row{key: "docker.registries (secret)", readers: secretReaders, value: func(c *config.Config) string {
			var out []string
			for _, r := range c.Docker.Registries {
				out = append(out, r.Host+" "+r.Username+" "+r.Password)
			}
			return strings.Join(out, "; ")
		}},
	)
	for _, r := range rows {
		w, d := r.value(want), r.value(def)
		for _, id := range stack.FunctionIDs() {
			g := r.value(got[id])
			switch reads := slices.Contains(r.readers, id); {
			case reads && g != w:
				t.Errorf("%s × %s: %q, want %q", r.key, id, g, w)
			case !reads && g == w && w != d:
				t.Errorf("%s × %s: %q reached a function that must not read it", r.key, id, g)
			}
		}
	}
	if !slices.ContainsFunc(rows, func(r row) bool { return r.key == "BERTH_CONTAINER_DAG_NODE_CLEANUP_ON_DAG_FINISHED" }) {
		t.Error("the table has no row for the group policy keys")
	}
	// What the front door keeps and the stack decides never reaches a function.
	for id, c := range got {
		if len(c.Auth.Tokens) != 0 {
			t.Errorf("%s: auth.tokens reached it", id)
		}
		if c.Docker.Scope != stackName {
			t.Errorf("%s: docker.scope %q, want the stack's name %q", id, c.Docker.Scope, stackName)
		}
	}
}

// readersAt are the SDK clients a function's environment makes: its
// endpoints of SSM and Secrets Manager (AWS_ENDPOINT_URL_SSM,
// AWS_ENDPOINT_URL_SECRETS_MANAGER).
func readersAt(env map[string]string) wiring.AWSReaders {
	cfg := aws.Config{Region: env["AWS_REGION"], Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")}
	return wiring.AWSReaders{
		SSM: ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL_SSM"]) }),
		Secrets: secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
			o.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL_SECRETS_MANAGER"])
		}),
	}
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
