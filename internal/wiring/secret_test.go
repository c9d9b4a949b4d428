package wiring

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// secretStub answers GetSecretValue with a fixed string (nil: a binary
// secret); there is no Secrets Manager emulator among the test services.
type secretStub struct{ s *string }

func (f secretStub) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return &secretsmanager.GetSecretValueOutput{Name: in.SecretId, SecretString: f.s}, nil
}

const hostsDoc = `docker:
  hosts:
    - name: h1
      endpoint: tcp://10.0.0.5:2376
      allowed_bind_roots: [/srv/data]
      tls:
        ca: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----"
        cert: "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----"
        key: "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEY\n-----END PRIVATE KEY-----"
`

func TestConfigFromSecret(t *testing.T) {
	ctx := context.Background()
	env := envOf(map[string]string{"BERTH_QUEUE_CREATE_QUEUE_URL": "http://q/c", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "http://q/l",
		"BERTH_CONTAINER_MAX_ATTEMPTS": "4"})
	data, err := ReadSecret(ctx, secretStub{aws.String(hostsDoc)}, "berth/runtime")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfigData("worker", "berth/runtime", data, env, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Docker.Hosts) != 1 || cfg.Docker.Hosts[0].TLS == nil || !strings.Contains(cfg.Docker.Hosts[0].TLS.Key, "TOPSECRETKEY") ||
		cfg.Container.MaxAttempts != 4 || cfg.Queue.Backend != "sqs" {
		t.Fatalf("config from the secret: %+v", cfg)
	}

	if _, err := ReadSecret(ctx, secretStub{nil}, "berth/binary"); err == nil {
		t.Error("a secret without a string was accepted")
	}
	// A bad document names the key, never the value.
	bad := strings.Replace(hostsDoc, "allowed_bind_roots: [/srv/data]", "capacity: TOPSECRETKEY", 1)
	_, err = LoadConfigData("worker", "berth/runtime", []byte(bad), env, true)
	if err == nil || !strings.Contains(err.Error(), "docker.hosts[0].capacity") || strings.Contains(err.Error(), "TOPSECRETKEY") {
		t.Errorf("bad document: %v; want the key named and the value withheld", err)
	}
	_, err = LoadConfigData("worker", "berth/runtime", []byte("docker: [TOPSECRETKEY"), env, true)
	if err == nil || strings.Contains(err.Error(), "TOPSECRETKEY") {
		t.Errorf("not YAML: %v; want an error without the value", err)
	}
}
