package emulate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/samtemplate"
)

// TestEmulatedEventBus: under the emulator every function is told the
// stack's bus (BERTH_WEBHOOKS_EVENT_BUS) and reaches the stand-in's
// EventBridge at AWS_ENDPOINT_URL_EVENTBRIDGE, which takes an event from
// the notify function only, as the template's policies say.
func TestEmulatedEventBus(t *testing.T) {
	t.Parallel()
	const region, stackName = "eu-west-1", "bus"
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte("container:\n  max_attempts: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := newDeployConfig(path, stackName, region)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.close()
	stack, _, err := LoadStack("../../template.yaml", cfg, samtemplate.Options{StackName: stackName, Region: region}, dc.parameters())
	if err != nil {
		t.Fatal(err)
	}
	dc.stack = stack
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range stack.FunctionIDs() {
		url, err := dc.endpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range functionEnv(stack.Functions[id], map[string]string{}, url, region) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if env["BERTH_WEBHOOKS_EVENT_BUS"] != "default" {
			t.Errorf("%s: BERTH_WEBHOOKS_EVENT_BUS = %q; want default", id, env["BERTH_WEBHOOKS_EVENT_BUS"])
		}
		client := eventbridge.New(eventbridge.Options{Region: region, BaseEndpoint: aws.String(env["AWS_ENDPOINT_URL_EVENTBRIDGE"]),
			Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")})
		p := &eventbus.Publisher{Client: client, Bus: env["BERTH_WEBHOOKS_EVENT_BUS"], Attempts: 1}
		_, err = p.Publish(ctx, []types.PutEventsRequestEntry{{Source: aws.String(eventbus.Source),
			DetailType: aws.String(eventbus.DetailTypeStatusChange), Detail: aws.String(`{"from":"` + id + `"}`)}})
		if want := id == "NotifyFunction"; (err == nil) != want {
			t.Errorf("%s: PutEvents on the stack's bus: %v; want allowed: %v", id, err, want)
		}
	}
	evs := dc.store.Events()
	if len(evs) != 1 || evs[0].Principal != "NotifyFunction" {
		t.Errorf("the stand-in's bus holds %+v; want the notify function's event only", evs)
	}
}
