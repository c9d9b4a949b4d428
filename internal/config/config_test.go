package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

const examplePath = "../../testdata/config.example.yml"

// noEnv is an environment with nothing set.
func noEnv(string) (string, bool) { return "", false }

// envOf returns an environment holding exactly m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// writeFile writes a config file into a temporary directory.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDefaultsArePinned pins each default, the eight container-worker-queue
// keys first: a changed default changes behaviour for everyone without a
// config file.
func TestDefaultsArePinned(t *testing.T) {
	for _, env := range []func(string) (string, bool){nil, noEnv} {
		cfg, err := Load("", env)
		if err != nil {
			t.Fatalf("Load(\"\"): %v", err)
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Fatalf("Load(\"\") = %+v, want Default() = %+v", cfg, Default())
		}
	}
	c := Default()
	tests := []struct {
		key       string
		got, want any
	}{
		// The container-worker-queue keys, whose defaults a carried-over config.yml relies on.
		{"container.refresh_image_status_on_start", c.Container.RefreshImageStatusOnStart, true},
		{"container.recover_running_dag_on_start", c.Container.RecoverRunningDAGOnStart, true},
		{"container.cleanup_dag_node_containers_before_start", c.Container.CleanupDAGNodeContainersBeforeStart, true},
		{"container.delete_container_on_node_success", c.Container.DeleteContainerOnNodeSuccess, true},
		{"container.dag_node_cleanup_on_failed", c.Container.DAGNodeCleanupOnFailed, CleanupPolicy("stop")},
		{"container.dag_node_cleanup_on_dag_finished", c.Container.DAGNodeCleanupOnDAGFinished, CleanupPolicy("delete")},
		{"container.create_queue_max_concurrency", c.Container.CreateQueueMaxConcurrency, 3},
		{"container.create_queue_max_pending", c.Container.CreateQueueMaxPending, 50},
		{"container.create_queue_max_pending_per_owner", c.Container.CreateQueueMaxPendingPerOwner, 0},
		// berth's.
		{"container.create_start_timeout", c.Container.CreateStartTimeout, 5 * time.Minute},
		{"container.max_attempts", c.Container.MaxAttempts, 5},
		{"container.unavailable_retry_for", c.Container.UnavailableRetryFor, 24 * time.Hour},
		{"container.stop_grace_period", c.Container.StopGracePeriod, 10 * time.Second},
		{"container.workspace_root", c.Container.WorkspaceRoot, "/srv/berth/workspaces"},
		{"container.outbox_sweep_after", c.Container.OutboxSweepAfter, 30 * time.Second},
		{"container.reconcile_every", c.Container.ReconcileEvery, 30 * time.Second},
		{"container.orphan_grace", c.Container.OrphanGrace, 5 * time.Minute},
		{"container.allowed_runtimes", c.Container.AllowedRuntimes, []string{"docker"}},
		{"container.default_lifetime", c.Container.DefaultLifetime, time.Duration(0)},
		{"container.max_lifetime", c.Container.MaxLifetime, time.Duration(0)},
		{"container.stopped_retention", c.Container.StoppedRetention, time.Duration(0)},
		{"container.failed_retention", c.Container.FailedRetention, time.Duration(0)},
		{"server.addr", c.Server.Addr, "127.0.0.1:8080"},
		{"server.data_dir", c.Server.DataDir, "./.berth"},
		{"server.request_body_limit", c.Server.RequestBodyLimit, int64(65536)},
		{"server.wait_max", c.Server.WaitMax, 25 * time.Second},
		{"server.metrics", c.Server.Metrics, "none"},
		{"store.backend", c.Store.Backend, StoreBackend("bolt")},
		{"store.bolt_path", c.Store.BoltPath, filepath.Join(".berth", "berth.db")},
		{"store.table_prefix", c.Store.TablePrefix, "berth-"},
		{"store.region", c.Store.Region, ""},
		{"auth.tokens", len(c.Auth.Tokens), 0},
		{"auth.admin_claim", c.Auth.AdminClaim, "cognito:groups"},
		{"auth.admin_group", c.Auth.AdminGroup, "berth-admin"},
		{"docker.hosts", len(c.Docker.Hosts), 0},
		{"kubernetes.clusters", len(c.Kubernetes.Clusters), 0},
		{"queue.backend", c.Queue.Backend, QueueBackend("memory")},
		{"queue.visibility_timeout", c.Queue.VisibilityTimeout, 30 * time.Second},
		{"webhooks.retry_backoff", c.Webhooks.RetryBackoff, 2 * time.Second},
		{"fleet.shards", c.Fleet.Shards, 0},
		{"fleet.period", c.Fleet.Period, time.Minute},
		{"fleet.reconcile_shard_queue_url", c.Fleet.ReconcileShardQueueURL, ""},
		{"fleet.watch_shard_queue_url", c.Fleet.WatchShardQueueURL, ""},
		{"webhooks.retry_backoff_max", c.Webhooks.RetryBackoffMax, 5 * time.Minute},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("default %s = %#v, want %#v", tt.key, tt.got, tt.want)
		}
	}
}

// TestDefaultIsFresh makes sure callers cannot change each other's defaults.
func TestDefaultIsFresh(t *testing.T) {
	a := Default()
	a.Container.AllowedRuntimes[0] = "changed"
	if b := Default(); b.Container.AllowedRuntimes[0] != "docker" {
		t.Fatalf("Default shares state between calls: %v", b.Container.AllowedRuntimes)
	}
}

func TestExampleLoads(t *testing.T) {
	cfg, err := Load(examplePath, noEnv)
	if err != nil {
		t.Fatalf("Load(%s): %v", examplePath, err)
	}
	// The example spells out the defaults: apart from the Docker host it
	// must say exactly what Default says, or one of them is wrong.
	want := Default()
	want.Docker.Hosts = []DockerHost{{
		Name:             "local",
		Endpoint:         "unix:///var/run/docker.sock",
		Capacity:         50,
		AllowedBindRoots: []string{"/srv/berth"},
		NetworkMode:      "none",
	}}
	want.Kubernetes.Clusters = cfg.Kubernetes.Clusters // `clusters: []`
	if len(cfg.Kubernetes.Clusters) != 0 {
		t.Errorf("example has kubernetes clusters: %+v", cfg.Kubernetes.Clusters)
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("example config:\n got %+v\nwant %+v", cfg, want)
	}
	if len(cfg.Auth.Tokens) != 0 {
		t.Errorf("example has auth tokens; it should run as the single local admin")
	}
}

func TestBoltPathFollowsDataDir(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"default", "", nil, filepath.Join(".berth", "berth.db")},
		{"file data_dir", "server: {data_dir: /var/lib/berth}\n", nil, "/var/lib/berth/berth.db"},
		{"env data_dir over file", "server: {data_dir: /var/lib/berth}\n",
			map[string]string{"BERTH_SERVER_DATA_DIR": "/tmp/b"}, "/tmp/b/berth.db"},
		{"explicit bolt_path", "store: {bolt_path: /x/y.db}\nserver: {data_dir: /var/lib/berth}\n", nil, "/x/y.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			cfg, err := Load(path, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Store.BoltPath != tt.want {
				t.Errorf("bolt_path = %q, want %q", cfg.Store.BoltPath, tt.want)
			}
		})
	}
}

func TestKubernetesNamespaceDefault(t *testing.T) {
	p := writeFile(t, `
container: {allowed_runtimes: [kubernetes]}
kubernetes:
  clusters:
    - {name: a, kubeconfig: /etc/berth/kubeconfig, context: a, capacity: 10, labels: {gpu: "true"}}
    - {name: b, namespace: jobs}
`)
	cfg, err := Load(p, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := []KubernetesCluster{
		{Name: "a", Kubeconfig: "/etc/berth/kubeconfig", Context: "a", Namespace: "berth", Capacity: 10, Labels: map[string]string{"gpu": "true"}},
		{Name: "b", Namespace: "jobs"},
	}
	if !reflect.DeepEqual(cfg.Kubernetes.Clusters, want) {
		t.Errorf("clusters = %+v, want %+v", cfg.Kubernetes.Clusters, want)
	}
}

func TestEmptyFileIsDefaults(t *testing.T) {
	for _, body := range []string{"", "# nothing\n", "container:\n"} {
		cfg, err := Load(writeFile(t, body), noEnv)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Errorf("%q: got %+v, want defaults", body, cfg)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yml"), noEnv)
	if !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("Load(missing) = %v, want a not-exist error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func TestTokensLookup(t *testing.T) {
	p := writeFile(t, `
auth:
  tokens:
    tok-alice-0123456789: {user: alice, admin: false}
    tok-root-0123456789: {user: root, admin: true}
`)
	cfg, err := Load(p, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := cfg.Auth.Tokens.Lookup("tok-root-0123456789"); !ok || got.User != "root" || !got.Admin {
		t.Errorf("Lookup(root) = %+v, %v", got, ok)
	}
	if got, ok := cfg.Auth.Tokens.Lookup("tok-alice-0123456789"); !ok || got.User != "alice" || got.Admin {
		t.Errorf("Lookup(alice) = %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "tok-alice", "tok-alice-01234567890"} {
		if _, ok := cfg.Auth.Tokens.Lookup(bad); ok {
			t.Errorf("Lookup(%q) matched", bad)
		}
	}
	if got := cfg.Auth.Tokens[0].Token.Reveal(); got != "tok-alice-0123456789" {
		t.Errorf("tokens keep file order: first = %q", got)
	}
}

// TestAdvertisedAddress: the address a Docker host's endpoints name, set or
// derived from its endpoint.
func TestAdvertisedAddress(t *testing.T) {
	for _, tc := range []struct {
		host DockerHost
		want string
	}{
		{DockerHost{Endpoint: "unix:///var/run/docker.sock"}, DefaultAdvertiseAddress},
		{DockerHost{Endpoint: "tcp://10.0.1.20:2376"}, "10.0.1.20"},
		{DockerHost{Endpoint: "tcp://[2001:db8::2]:2376"}, "2001:db8::2"},
		{DockerHost{Endpoint: "tcp://10.0.1.20:2376", AdvertiseAddress: "docker-1.example.com"}, "docker-1.example.com"},
	} {
		if got := tc.host.AdvertisedAddress(); got != tc.want {
			t.Errorf("%+v: AdvertisedAddress() = %q, want %q", tc.host, got, tc.want)
		}
	}
}
