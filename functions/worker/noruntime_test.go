package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/wiring"
)

// TestWorkerWithoutRuntime: with neither docker.hosts nor
// kubernetes.clusters configured, and with an EKS cluster only, the worker
// function starts (it used to exit at init on "docker runtime: no hosts
// configured", leaving creates pending with their admission slots held),
// and a Docker create that reaches it fails at once, on its first
// delivery, with the reason, releasing its slot.
func TestWorkerWithoutRuntime(t *testing.T) {
	for name, doc := range map[string]string{
		"none":     "",
		"eks only": "kubernetes:\n  clusters:\n    - {name: eks-prod, eks_cluster: prod, region: eu-west-1}\n",
	} {
		t.Run(name, func(t *testing.T) { workerWithout(t, doc) })
	}
}

// workerWithout runs TestWorkerWithoutRuntime with the configuration
// document doc (none when empty) as the function's config file.
func workerWithout(t *testing.T, doc string) {
	ctx := context.Background()
	ddb := teststores.DynamoClient(t)
	prefix := fmt.Sprintf("nort%d-", time.Now().UnixNano()%1e9)
	if err := dynamostore.EnsureTables(ctx, ddb, prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), ddb, prefix) })
	const createURL = "http://127.0.0.1:1/000000000000/nort-create"
	vars := map[string]string{
		"BERTH_STORE_TABLE_PREFIX":        prefix,
		"BERTH_QUEUE_CREATE_QUEUE_URL":    createURL,
		"BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "http://127.0.0.1:1/000000000000/nort-lifecycle",
		"AWS_ENDPOINT_URL_DYNAMODB":       testenv.DynamoDBEndpoint(t),
		"AWS_REGION":                      "us-east-1",
		"AWS_ACCESS_KEY_ID":               "local",
		"AWS_SECRET_ACCESS_KEY":           "local",
	}
	if doc != "" {
		path := filepath.Join(t.TempDir(), "config.yml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		vars[wiring.ConfigFileVar] = path
		vars["BERTH_CONTAINER_ALLOWED_RUNTIMES"] = "docker,kubernetes"
	}
	for k, v := range vars {
		t.Setenv(k, v) // the SDK's default chain reads the process environment
	}
	fn, err := setup(ctx, os.LookupEnv, os.Environ(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("the worker does not start without a runtime: %v", err)
	}
	st := dynamostore.New(ddb, dynamostore.Options{TablePrefix: prefix})
	p := storetest.NewCreate(storetest.NewClock(), "alice")
	if _, err := st.CreateInstance(ctx, p); err != nil {
		t.Fatal(err)
	}
	body, err := outbox.FromItem(p.Outbox).Encode()
	if err != nil {
		t.Fatal(err)
	}
	resp := fn.handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "m1", Body: string(body), EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:nort-create",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"},
	}}})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("the create was left for a retry: %+v", resp.BatchItemFailures)
	}
	inst, err := st.GetInstance(ctx, p.Instance.ID)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != fsm.Failed || !strings.Contains(inst.StatusReason, `no "docker" runtime is configured`) {
		t.Errorf("instance %s, reason %q; want failed with the missing runtime", inst.Status, inst.StatusReason)
	}
	if n, err := st.AdmissionCount(ctx); err != nil || n != 0 {
		t.Errorf("admission slots held: %d, %v", n, err)
	}
}
