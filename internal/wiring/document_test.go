package wiring

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/configstandin"
)

const (
	testParam  = "/berth/config"
	testSecret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:berth-runtime-AbCdEf"
)

// readersFor are the real SDK clients of principal, on the stand-in.
func readersFor(t *testing.T, st *configstandin.Store, principal string) AWSReaders {
	t.Helper()
	srv := httptest.NewServer(st.Handler(principal))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	return AWSReaders{
		SSM:     ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		Secrets: secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
	}
}

const (
	paramDoc = `container:
  dag_node_cleanup_on_dag_finished: delete
  max_attempts: 4
docker:
  hosts:
    - name: h1
      endpoint: tcp://10.0.0.5:2376
      allowed_bind_roots: [/srv/data]
    - name: h2
      endpoint: tcp://10.0.0.6:2376
`
	// plainDoc is paramDoc with hosts that need no TLS.
	plainDoc = `container:
  dag_node_cleanup_on_dag_finished: delete
  max_attempts: 4
docker:
  hosts:
    - name: h1
      endpoint: unix:///run/h1.sock
      allowed_bind_roots: [/srv/data]
    - name: h2
      endpoint: unix:///run/h2.sock
`
	secretDocTLS = `docker:
  hosts:
    - name: h1
      tls:
        ca: "-----BEGIN CERTIFICATE-----\nCA1\n-----END CERTIFICATE-----"
        cert: "-----BEGIN CERTIFICATE-----\nC1\n-----END CERTIFICATE-----"
        key: "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEY1\n-----END PRIVATE KEY-----"
    - name: h2
      tls:
        ca: "-----BEGIN CERTIFICATE-----\nCA2\n-----END CERTIFICATE-----"
        cert: "-----BEGIN CERTIFICATE-----\nC2\n-----END CERTIFICATE-----"
        key: "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEY2\n-----END PRIVATE KEY-----"
  registries:
    - {host: ghcr.io, username: bot, password: TOPSECRETPW}
`
)

// TestLoadFunctionConfig: the deployment's configuration is the pinned version
// of the parameter, joined by host name with the secret's material; what
// the parameter and the secret may each hold, and the environment's keys,
// are checked, and problems never quote a secret value.
func TestLoadFunctionConfig(t *testing.T) {
	queues := map[string]string{"BERTH_QUEUE_CREATE_QUEUE_URL": "http://q/c", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "http://q/l"}
	cases := []struct {
		name      string
		params    []string // versions of testParam, 1 first
		secret    string
		env       map[string]string
		principal string
		function  string // "worker" when empty
		wantErr   string // "" for success
		check     func(t *testing.T, e *Configuration)
	}{
		{name: "the pinned version, not the latest", params: []string{"container: {max_attempts: 2}\n", plainDoc, "container: {max_attempts: 9}\n"},
			env: map[string]string{ConfigParameterVar: testParam + ":2"},
			check: func(t *testing.T, e *Configuration) {
				if e.Config.Container.DAGNodeCleanupOnDAGFinished != config.CleanupDelete || e.Config.Container.MaxAttempts != 4 ||
					e.ConfigVersion != 2 || len(e.Config.Docker.Hosts) != 2 || !strings.Contains(e.Document, testParam+":2") {
					t.Errorf("config %+v, version %d, document %q", e.Config.Container, e.ConfigVersion, e.Document)
				}
			}},
		{name: "joined with the secret by host name", params: []string{paramDoc}, secret: secretDocTLS,
			env: map[string]string{ConfigParameterVar: testParam + ":1", ConfigSecretVar: testSecret},
			check: func(t *testing.T, e *Configuration) {
				h := e.Config.Docker.Hosts
				if len(h) != 2 || h[0].TLS == nil || !strings.Contains(h[0].TLS.Key, "TOPSECRETKEY1") || h[1].TLS == nil ||
					!strings.Contains(h[1].TLS.Key, "TOPSECRETKEY2") || h[0].AllowedBindRoots[0] != "/srv/data" ||
					len(e.Config.Docker.Registries) != 1 || e.Config.Docker.Registries[0].Password != "TOPSECRETPW" {
					t.Errorf("joined config: %+v", e.Config.Docker)
				}
			}},
		{name: "the secret alone is the whole document (as before the parameter)", secret: "container: {max_attempts: 7}\ndocker: {hosts: [{name: h1, endpoint: 'unix:///x.sock'}]}\n",
			env: map[string]string{ConfigSecretVar: testSecret},
			check: func(t *testing.T, e *Configuration) {
				if e.Config.Container.MaxAttempts != 7 || len(e.Config.Docker.Hosts) != 1 || e.ConfigVersion != 0 || e.Document != "secret "+testSecret {
					t.Errorf("config %+v, document %q", e.Config, e.Document)
				}
			}},
		{name: "the api: TLS withheld, not missing", params: []string{paramDoc}, function: FunctionAPI,
			env: map[string]string{ConfigParameterVar: testParam + ":1"},
			check: func(t *testing.T, e *Configuration) {
				h := e.Config.Docker.Hosts
				if len(h) != 2 || h[0].TLS == nil || *h[0].TLS != (config.DockerTLS{}) || h[0].AllowedBindRoots[0] != "/srv/data" {
					t.Errorf("api config: %+v", e.Config.Docker)
				}
			}},
		{name: "the notify function: TLS withheld, not missing", params: []string{paramDoc}, function: FunctionNotify,
			env: map[string]string{ConfigParameterVar: testParam + ":1"},
			check: func(t *testing.T, e *Configuration) {
				if h := e.Config.Docker.Hosts; len(h) != 2 || h[0].TLS == nil || *h[0].TLS != (config.DockerTLS{}) {
					t.Errorf("notify config: %+v", e.Config.Docker)
				}
			}},
		{name: "a worker without the secret a tcp host needs", params: []string{paramDoc},
			env: map[string]string{ConfigParameterVar: testParam + ":1"}, wantErr: "docker.hosts[0].tls"},
		{name: "a host in the secret only", params: []string{"docker: {hosts: [{name: h1, endpoint: 'unix:///x.sock'}]}\n"}, secret: secretDocTLS,
			env: map[string]string{ConfigParameterVar: testParam + ":1", ConfigSecretVar: testSecret}, wantErr: `docker.hosts[1] ("h2")`},
		{name: "secret material in the parameter", params: []string{strings.Replace(paramDoc, "allowed_bind_roots: [/srv/data]",
			"tls: {key: TOPSECRETKEY1}", 1) + "  registries: [{host: r, password: TOPSECRETPW}]\n"},
			env: map[string]string{ConfigParameterVar: testParam + ":1"}, wantErr: "docker.hosts[0].tls.key, docker.registries[0].password"},
		{name: "a non-secret key in the secret", params: []string{paramDoc},
			secret: strings.Replace(secretDocTLS, "- name: h1", "- name: h1\n      endpoint: TOPSECRETKEY1", 1),
			env:    map[string]string{ConfigParameterVar: testParam + ":1", ConfigSecretVar: testSecret}, wantErr: "may hold only"},
		{name: "a key the environment sets otherwise", params: []string{plainDoc},
			env:     map[string]string{ConfigParameterVar: testParam + ":1", "BERTH_CONTAINER_MAX_ATTEMPTS": "3"},
			wantErr: `container.max_attempts to "4", and the function's environment sets BERTH_CONTAINER_MAX_ATTEMPTS="3"`},
		{name: "a key the environment sets alike", params: []string{plainDoc},
			env: map[string]string{ConfigParameterVar: testParam + ":1", "BERTH_CONTAINER_MAX_ATTEMPTS": "4", "BERTH_CONTAINER_STOP_GRACE_PERIOD": "3s"},
			check: func(t *testing.T, e *Configuration) {
				if e.Config.Container.MaxAttempts != 4 || e.Config.Container.StopGracePeriod.Seconds() != 3 {
					t.Errorf("container %+v", e.Config.Container)
				}
			}},
		{name: "a function the policy does not allow", params: []string{paramDoc}, principal: "DispatcherFunction",
			env: map[string]string{ConfigParameterVar: testParam + ":1"}, wantErr: "AccessDeniedException"},
		{name: "a version that does not exist", params: []string{paramDoc},
			env: map[string]string{ConfigParameterVar: testParam + ":4"}, wantErr: "ParameterVersionNotFound"},
		{name: "unpinned", params: []string{paramDoc}, env: map[string]string{ConfigParameterVar: testParam}, wantErr: "name:version"},
		{name: "a file beside the parameter", params: []string{paramDoc},
			env: map[string]string{ConfigParameterVar: testParam + ":1", ConfigFileVar: "/x.yml"}, wantErr: "one source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := configstandin.New("eu-west-1", "123456789012", func(principal, action, resource string) bool {
				return principal == "WorkerFunction"
			})
			for _, v := range tc.params {
				st.PutParameter(testParam, v)
			}
			if tc.secret != "" {
				st.PutSecret(testSecret, tc.secret)
			}
			principal := tc.principal
			if principal == "" {
				principal = "WorkerFunction"
			}
			vars := map[string]string{}
			for k, v := range queues {
				vars[k] = v
			}
			for k, v := range tc.env {
				vars[k] = v
			}
			function, withSQS := tc.function, false
			if function == "" {
				function, withSQS = "worker", true
			}
			e, err := LoadFunctionConfig(context.Background(), function, withSQS, envOf(vars), readersFor(t, st, principal),
				slog.New(slog.NewTextHandler(io.Discard, nil)))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("loadDocument: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("loadDocument: %v; want an error with %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "TOPSECRET"):
				t.Fatalf("the error quotes secret material: %v", err)
			case tc.check != nil:
				tc.check(t, e)
			}
		})
	}
}
