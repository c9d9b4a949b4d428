package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fieldErrors returns the FieldErrors joined in err.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*FieldError
	for _, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q is not a *FieldError", e)
		}
		out = append(out, fe)
	}
	return out
}

// want is one expected error: its key, the start of its source (a file
// source is checked as "FILE:<line>") and a part of its message.
type want struct{ key, source, msg string }

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		file string // "" for no file
		env  map[string]string
		want []want
	}{
		{
			name: "env below minimum",
			env:  map[string]string{"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING": "0"},
			want: []want{{"container.create_queue_max_pending", "BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING", "must be ≥ 1, got 0"}},
		},
		{
			name: "file below minimum",
			file: "container:\n  create_queue_max_concurrency: 0\n",
			want: []want{{"container.create_queue_max_concurrency", "FILE:2", "must be ≥ 1, got 0"}},
		},
		{
			name: "env wins over file and is named",
			file: "container:\n  create_queue_max_pending: 10\n",
			env:  map[string]string{"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING": "-1"},
			want: []want{{"container.create_queue_max_pending", "BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING", "got -1"}},
		},
		{
			name: "env not a number",
			env:  map[string]string{"BERTH_CONTAINER_MAX_ATTEMPTS": "ten", "BERTH_SERVER_REQUEST_BODY_LIMIT": "99999999999999999999"},
			want: []want{
				{"container.max_attempts", "BERTH_CONTAINER_MAX_ATTEMPTS", `want an integer, got "ten": invalid syntax`},
				{"server.request_body_limit", "BERTH_SERVER_REQUEST_BODY_LIMIT", "value out of range"},
			},
		},
		{
			name: "env bad bool and duration",
			env: map[string]string{
				"BERTH_CONTAINER_REFRESH_IMAGE_STATUS_ON_START": "maybe",
				"BERTH_CONTAINER_CREATE_START_TIMEOUT":          "5",
			},
			want: []want{
				{"container.refresh_image_status_on_start", "BERTH_CONTAINER_REFRESH_IMAGE_STATUS_ON_START", `want true or false, got "maybe"`},
				{"container.create_start_timeout", "BERTH_CONTAINER_CREATE_START_TIMEOUT", "want a Go duration string"},
			},
		},
		{
			name: "file wrong types",
			file: "container:\n  create_queue_max_pending: many\n  stop_grace_period: 10\n  recover_running_dag_on_start: perhaps\n",
			want: []want{
				{"container.create_queue_max_pending", "FILE:2", "cannot unmarshal !!str `many` into int"},
				{"container.stop_grace_period", "FILE:3", "want a Go duration string"},
				{"container.recover_running_dag_on_start", "FILE:4", "into bool"},
			},
		},
		{
			name: "durations not positive",
			file: "container:\n  create_start_timeout: 0s\n  outbox_sweep_after: -1s\n  stop_grace_period: -1s\nserver:\n  wait_max: 0s\nqueue:\n  visibility_timeout: 0s\n",
			want: []want{
				{"container.create_start_timeout", "FILE:2", "must be > 0, got 0s"},
				{"container.stop_grace_period", "FILE:4", "must be ≥ 0, got -1s"},
				{"container.outbox_sweep_after", "FILE:3", "must be > 0"},
				{"server.wait_max", "FILE:6", "must be > 0"},
				{"queue.visibility_timeout", "FILE:8", "must be > 0"},
			},
		},
		{
			name: "cleanup policies",
			file: "container:\n  dag_node_cleanup_on_failed: destroy\n",
			env:  map[string]string{"BERTH_CONTAINER_DAG_NODE_CLEANUP_ON_DAG_FINISHED": "Delete"},
			want: []want{
				{"container.dag_node_cleanup_on_failed", "FILE:2", `must be one of none, stop, delete, got "destroy"`},
				{"container.dag_node_cleanup_on_dag_finished", "BERTH_CONTAINER_DAG_NODE_CLEANUP_ON_DAG_FINISHED", `got "Delete"`},
			},
		},
		{
			name: "lifetimes",
			file: "container:\n  default_lifetime: 9h\n  max_lifetime: 8h\n",
			want: []want{
				{"container.default_lifetime", "FILE:2", "must be at most container.max_lifetime (8h0m0s), got 9h0m0s"},
			},
		},
		{
			name: "negative lifetimes",
			file: "container:\n  default_lifetime: -1s\n  max_lifetime: -1s\n",
			want: []want{
				{"container.default_lifetime", "FILE:2", "must be ≥ 0"},
				{"container.max_lifetime", "FILE:3", "must be ≥ 0"},
			},
		},
		{
			name: "negative retentions",
			file: "container:\n  stopped_retention: -1h\n",
			env:  map[string]string{"BERTH_CONTAINER_FAILED_RETENTION": "-24h"},
			want: []want{
				{"container.stopped_retention", "FILE:2", "must be ≥ 0 (0: kept until deleted), got -1h0m0s"},
				{"container.failed_retention", "BERTH_CONTAINER_FAILED_RETENTION", "must be ≥ 0 (0: kept until deleted), got -24h0m0s"},
			},
		},
		{
			name: "workspace root and runtimes",
			file: "container:\n  workspace_root: srv/ws\n  allowed_runtimes:\n    - docker\n    - podman\n",
			want: []want{
				{"container.workspace_root", "FILE:2", `must be an absolute path, got "srv/ws"`},
				{"container.allowed_runtimes[1]", "FILE:5", `got "podman"`},
			},
		},
		{
			name: "env list replaces file list in sources",
			file: "container:\n  allowed_runtimes:\n    - docker\n    - kubernetes\n",
			env:  map[string]string{"BERTH_CONTAINER_ALLOWED_RUNTIMES": "docker,docker", "BERTH_CONTAINER_WORKSPACE_ROOT": "/srv/../ws"},
			want: []want{
				{"container.workspace_root", "BERTH_CONTAINER_WORKSPACE_ROOT", `must be a clean path ("/ws")`},
				{"container.allowed_runtimes[1]", "BERTH_CONTAINER_ALLOWED_RUNTIMES", `"docker" is listed twice`},
			},
		},
		{
			name: "server",
			env:  map[string]string{"BERTH_SERVER_ADDR": "8080", "BERTH_SERVER_DATA_DIR": "", "BERTH_SERVER_REQUEST_BODY_LIMIT": "0", "BERTH_SERVER_METRICS": "cloudwatch"},
			want: []want{
				{"server.metrics", "BERTH_SERVER_METRICS", `must be one of none, stdout, got "cloudwatch"`},
				{"server.addr", "BERTH_SERVER_ADDR", `want host:port, got "8080"`},
				{"server.data_dir", "BERTH_SERVER_DATA_DIR", "must not be empty"},
				{"server.request_body_limit", "BERTH_SERVER_REQUEST_BODY_LIMIT", "must be ≥ 1, got 0"},
			},
		},
		{
			name: "store",
			file: "store:\n  backend: postgres\n",
			want: []want{{"store.backend", "FILE:2", `must be one of bolt, dynamodb, got "postgres"`}},
		},
		{
			name: "dynamodb prefix",
			env:  map[string]string{"BERTH_STORE_BACKEND": "dynamodb", "BERTH_STORE_TABLE_PREFIX": "berth prod/"},
			want: []want{{"store.table_prefix", "BERTH_STORE_TABLE_PREFIX", "may hold only"}},
		},
		{
			name: "queue sqs needs urls",
			env:  map[string]string{"BERTH_QUEUE_BACKEND": "sqs", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "berth-lifecycle", "BERTH_QUEUE_VISIBILITY_TIMEOUT": "1500ms"},
			want: []want{
				{"queue.visibility_timeout", "BERTH_QUEUE_VISIBILITY_TIMEOUT", "must be whole seconds"},
				{"queue.create_queue_url", "default", "is required with queue.backend sqs"},
				{"queue.lifecycle_queue_url", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL", "want an SQS queue URL"},
			},
		},
		{
			name: "queue notify url",
			env: map[string]string{"BERTH_QUEUE_BACKEND": "sqs", "BERTH_QUEUE_CREATE_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/c",
				"BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/l", "BERTH_QUEUE_NOTIFY_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/l"},
			want: []want{{"queue.notify_queue_url", "BERTH_QUEUE_NOTIFY_QUEUE_URL", "must differ from"}},
		},
		{
			name: "queue notify not a url",
			env: map[string]string{"BERTH_QUEUE_BACKEND": "sqs", "BERTH_QUEUE_CREATE_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/c",
				"BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/l", "BERTH_QUEUE_NOTIFY_QUEUE_URL": "berth-notify"},
			want: []want{{"queue.notify_queue_url", "BERTH_QUEUE_NOTIFY_QUEUE_URL", "want an SQS queue URL"}},
		},
		{
			name: "fleet shards above the buckets",
			env:  map[string]string{"BERTH_FLEET_SHARDS": "1025"},
			want: []want{{"fleet.shards", "BERTH_FLEET_SHARDS", "must be 0 (one shard per 100 nodes) to 1024 (one per node bucket), got 1025"}},
		},
		{
			name: "fleet shards negative, period zero",
			file: "fleet:\n  shards: -1\n  period: 0s\n",
			want: []want{{"fleet.shards", "FILE:2", "got -1"}, {"fleet.period", "FILE:3", "must be > 0"}},
		},
		{
			name: "fleet shard queues",
			env: map[string]string{"BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/s",
				"BERTH_FLEET_WATCH_SHARD_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/s"},
			want: []want{{"fleet.watch_shard_queue_url", "BERTH_FLEET_WATCH_SHARD_QUEUE_URL", "must differ from"}},
		},
		{
			name: "fleet shard queue not a url",
			env:  map[string]string{"BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL": "berth-reconcile-shards"},
			want: []want{{"fleet.reconcile_shard_queue_url", "BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL", "want an SQS queue URL"}},
		},
		{
			name: "queue backend",
			file: "queue: {backend: kafka, visibility_timeout: 13h}\n",
			want: []want{
				{"queue.backend", "FILE:1", `got "kafka"`},
				{"queue.visibility_timeout", "FILE:1", "must be ≤ 12h0m0s"},
			},
		},
		{
			name: "auth",
			file: "auth:\n  admin_group: ''\n  tokens:\n    tok-a-0123456789: {user: alice}\n    tok-b-0123456789: {admin: true}\n    'tok c 0123456789': {user: carol}\n",
			want: []want{
				{"auth.admin_group", "FILE:2", "must not be empty"},
				{"auth.tokens[1].user", "FILE:5", "must not be empty"},
				{"auth.tokens[2]", "FILE:6", "must not contain spaces"},
			},
		},
		{
			name: "console identity provider without its client",
			file: "auth:\n  oidc_issuer: https://idp.example.com\n",
			want: []want{{"auth.oidc_client_id", "FILE:1", "go together"}},
		},
		{
			name: "console identity provider over plain http",
			file: "auth:\n  oidc_issuer: http://idp.example.com\n  oidc_client_id: console\n",
			want: []want{{"auth.oidc_issuer", "FILE:2", "must be an https URL"}},
		},
		{
			name: "docker hosts",
			file: `docker:
  hosts:
    - name: a
      endpoint: unix:///var/run/docker.sock
      capacity: -1
      allowed_bind_roots: [srv, /srv/../etc, /]
    - name: a
      endpoint: http://10.0.0.1:2375
    - endpoint: tcp://10.0.0.2:2376
    - name: c
      endpoint: tcp://127.0.0.1:2375
    - name: d
      endpoint: unix:///run/docker.sock
      tls: {ca_file: /etc/ca.pem, cert_file: /etc/cert.pem}
  registries:
    - host: https://ghcr.io
    - {host: ghcr.io}
    - {host: ghcr.io, username: u, password: p}
`,
			want: []want{
				{"docker.hosts[0].capacity", "FILE:5", "must be ≥ 0, got -1"},
				{"docker.hosts[0].allowed_bind_roots[0]", "FILE:6", "must be an absolute path"},
				{"docker.hosts[0].allowed_bind_roots[1]", "FILE:6", "must be a clean path"},
				{"docker.hosts[0].allowed_bind_roots[2]", "FILE:6", "must not be /"},
				{"docker.hosts[1].name", "FILE:7", `"a" is already the name of docker.hosts[0]`},
				{"docker.hosts[1].endpoint", "FILE:8", "want a unix:// or tcp:// endpoint"},
				{"docker.hosts[2].name", "FILE:9", "must not be empty"},
				{"docker.hosts[2].tls", "FILE:9", "is required for a tcp:// endpoint that is not loopback"},
				{"docker.hosts[4].tls", "FILE:14", "is for tcp:// endpoints"},
				{"docker.hosts[4].tls", "FILE:14", "cert and key must be given together"},
				{"docker.registries[0].host", "FILE:16", "without scheme or path"},
				{"docker.registries[2].host", "FILE:18", `"ghcr.io" is already docker.registries[1]`},
			},
		},
		{
			name: "docker advertise_address",
			file: `docker:
  hosts:
    - {name: a, endpoint: 'unix:///var/run/docker.sock', advertise_address: 'tcp://10.0.0.1'}
    - {name: b, endpoint: 'unix:///var/run/docker.sock', advertise_address: '10.0.0.1:80'}
    - {name: c, endpoint: 'unix:///var/run/docker.sock', advertise_address: '-bad.example.com'}
    - {name: d, endpoint: 'unix:///var/run/docker.sock', advertise_address: 'docker-1.internal.example.com'}
    - {name: e, endpoint: 'unix:///var/run/docker.sock', advertise_address: '2001:db8::7'}
`,
			want: []want{
				{"docker.hosts[0].advertise_address", "FILE:3", "want an IP address or a DNS name"},
				{"docker.hosts[1].advertise_address", "FILE:4", "want an IP address or a DNS name"},
				{"docker.hosts[2].advertise_address", "FILE:5", "want an IP address or a DNS name"},
			},
		},
		{
			name: "kubernetes",
			file: "kubernetes:\n  clusters:\n    - {name: eks, namespace: Berth_NS}\n    - {name: eks, capacity: -2}\n    - {namespace: x}\n",
			want: []want{
				{"kubernetes.clusters[0].namespace", "FILE:3", "must be a DNS-1123 label"},
				{"kubernetes.clusters[1].name", "FILE:4", `"eks" is already the name of kubernetes.clusters[0]`},
				{"kubernetes.clusters[1].capacity", "FILE:4", "must be ≥ 0, got -2"},
				{"kubernetes.clusters[2].name", "FILE:5", "must not be empty"},
			},
		},
		{
			name: "kubernetes access",
			file: "kubernetes:\n  clusters:\n    - {name: a/b, eks_cluster: prod, kubeconfig: /k}\n    - {name: c, region: eu-west-1, allowed_host_path_roots: [data, /srv/../x]}\n",
			want: []want{
				{"kubernetes.clusters[0].name", "FILE:3", "must not contain '/'"},
				{"kubernetes.clusters[0].eks_cluster", "FILE:3", "through EKS or through a kubeconfig, not both"},
				{"kubernetes.clusters[1].region", "FILE:4", "only applies with eks_cluster"},
				{"kubernetes.clusters[1].allowed_host_path_roots[0]", "FILE:4", "must be an absolute path"},
				{"kubernetes.clusters[1].allowed_host_path_roots[1]", "FILE:4", "must be a clean path"},
			},
		},
		{
			// One rule for every node's roots (hostpolicy.CheckRoot): "/"
			// is refused for a cluster as for a Docker host.
			name: "kubernetes root /",
			file: "kubernetes:\n  clusters:\n    - {name: c, allowed_host_path_roots: [/srv, /]}\n",
			want: []want{
				{"kubernetes.clusters[0].allowed_host_path_roots[1]", "FILE:3", "must not be /"},
			},
		},
		{
			name: "unknown keys",
			file: "containr:\n  x: 1\ncontainer:\n  create_queue_max_pendng: 5\ndocker:\n  hosts:\n    - {name: a, endpoint: 'unix:///x', capcity: 1}\nauth:\n  tokens:\n    tok-0123456789abcdef: {user: a, admn: true}\n",
			want: []want{
				{"containr", "FILE:1", "unknown key"},
				{"container.create_queue_max_pendng", "FILE:4", "unknown key"},
				{"docker.hosts[0].capcity", "FILE:7", "unknown key"},
				{"auth.tokens[0].admn", "FILE:10", "unknown key"},
			},
		},
		{
			name: "key given twice",
			file: "server:\n  addr: ':1'\n  addr: ':2'\n",
			want: []want{{"server.addr", "FILE:3", "key given twice (first at line 2)"}},
		},
		{
			name: "second document",
			file: "server: {addr: ':1'}\n---\nserver: {addr: ':2'}\n",
			want: []want{{"", "FILE", "more than one YAML document"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			cfg, err := Load(path, envOf(tt.env))
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a config with its error")
			}
			got := fieldErrors(t, err)
			for _, w := range tt.want {
				source := strings.Replace(w.source, "FILE", path, 1)
				i := slices.IndexFunc(got, func(fe *FieldError) bool {
					return fe.Key == w.key && fe.Source == source && strings.Contains(fe.Err.Error(), w.msg)
				})
				if i < 0 {
					t.Errorf("no error for %s from %s containing %q in:\n%v", w.key, source, w.msg, err)
					continue
				}
				// The message names key and source, as people read it.
				msg := got[i].Error()
				if !strings.HasPrefix(msg, "config: ") || !strings.Contains(msg, w.key) || !strings.Contains(msg, "(from "+source+")") {
					t.Errorf("message %q does not name key %s and source %s", msg, w.key, source)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(got), len(tt.want), err)
			}
		})
	}
}

// TestErrorMessageFormat pins the exact wording of the common case.
func TestErrorMessageFormat(t *testing.T) {
	_, err := Load("", envOf(map[string]string{"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING": "0"}))
	want := "config: container.create_queue_max_pending: must be ≥ 1, got 0 (from BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING)"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

func TestNotYAML(t *testing.T) {
	for _, body := range []string{"container: [\n", "\tcontainer: {}\n"} {
		_, err := Load(writeFile(t, body), noEnv)
		if err == nil || !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("%q: error = %v", body, err)
		}
	}
	_, err := Load(writeFile(t, "- a\n- b\n"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal !!seq") {
		t.Errorf("a list as the document: %v", err)
	}
}

func TestValidHostsPass(t *testing.T) {
	p := writeFile(t, `docker:
  hosts:
    - {name: a, endpoint: 'unix:///var/run/docker.sock', allowed_bind_roots: [/srv/berth, /data]}
    - {name: b, endpoint: 'tcp://localhost:2375'}
    - {name: c, endpoint: 'tcp://[::1]:2375'}
    - name: d
      endpoint: tcp://docker.internal:2376
      tls: {ca_file: /etc/ca.pem, cert: "-----BEGIN CERTIFICATE-----", key_file: /etc/key.pem}
      labels: {gpu: "true"}
  registries:
    - {host: ghcr.io, username: u, password: p}
    - {host: 123456789012.dkr.ecr.eu-west-1.amazonaws.com}
`)
	if _, err := Load(p, noEnv); err != nil {
		t.Fatal(err)
	}
}

func TestWebhooksAllowedNetworks(t *testing.T) {
	for _, tc := range []struct {
		file string
		ok   bool
	}{
		{"", true},
		{"webhooks:\n  allowed_networks: [127.0.0.0/8, \"fd00::/8\"]\n", true},
		{"webhooks:\n  allowed_networks: [127.0.0.1]\n", false},
		{"webhooks:\n  allowed_networks: [localhost/8]\n", false},
	} {
		cfg, err := LoadData("config.yml", []byte(tc.file), func(string) (string, bool) { return "", false })
		if tc.ok != (err == nil) {
			t.Errorf("Load(%q) = %v; want ok=%v", tc.file, err, tc.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "webhooks.allowed_networks[0]") {
			t.Errorf("Load(%q) = %v; want it to name webhooks.allowed_networks[0]", tc.file, err)
		}
		if err == nil && tc.file == "" && len(cfg.Webhooks.AllowedNetworks) != 0 {
			t.Errorf("default webhooks.allowed_networks = %v; want none", cfg.Webhooks.AllowedNetworks)
		}
	}
}

// TestWebhooksRetryBackoff: the delivery retry keys are positive, the cap
// at least the first delay and at most what a queue can delay.
func TestWebhooksRetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		file    string
		bad     string // the key the error names; "" when valid
		base, m time.Duration
	}{
		{"", "", 2 * time.Second, 5 * time.Minute},
		{"webhooks:\n  retry_backoff: 200ms\n  retry_backoff_max: 1s\n", "", 200 * time.Millisecond, time.Second},
		{"webhooks:\n  retry_backoff: 0s\n", "webhooks.retry_backoff", 0, 0},
		{"webhooks:\n  retry_backoff: 10s\n  retry_backoff_max: 5s\n", "webhooks.retry_backoff_max", 0, 0},
		{"webhooks:\n  retry_backoff_max: 16m\n", "webhooks.retry_backoff_max", 0, 0},
	} {
		cfg, err := LoadData("config.yml", []byte(tc.file), func(string) (string, bool) { return "", false })
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("Load(%q) = %v; want it valid", tc.file, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("Load(%q) = %v; want an error naming %s", tc.file, err, tc.bad)
		case tc.bad == "" && (cfg.Webhooks.RetryBackoff != tc.base || cfg.Webhooks.RetryBackoffMax != tc.m):
			t.Errorf("Load(%q) = %s, %s; want %s, %s", tc.file, cfg.Webhooks.RetryBackoff, cfg.Webhooks.RetryBackoffMax, tc.base, tc.m)
		}
	}
}
