package lambdahttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// fixtureID is the container id the events/ fixtures name; the fuzzer
// replaces it with a container that exists in its store.
const fixtureID = "01JDQ7ZP3K9Y6V4M8N2B5C7D1E"

// FuzzLambdaHandler feeds arbitrary event JSON, seeded from events/*.json,
// to the Lambda handler (adapter + real API handler on a bolt store): never
// a panic, never a 5xx, and a response API Gateway can pass on. JSON the
// Lambda runtime could not decode into the event type never reaches the
// handler and is skipped.
//
//	go test -run '^$' -fuzz FuzzLambdaHandler -fuzztime 150s ./internal/lambdahttp
func FuzzLambdaHandler(f *testing.F) {
	files, _ := filepath.Glob("../../events/*.json")
	if len(files) == 0 {
		f.Fatal("no events/*.json to seed from")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"requestContext":{"http":{"method":"GET"}},"rawPath":"/api/containers"}`))
	f.Add([]byte(`{"requestContext":{"http":{"method":"POST"},"authorizer":{"jwt":{"claims":{"sub":"u"}}}},"rawPath":"/api/containers","body":"e30=","isBase64Encoded":true}`))

	s := teststores.Bolt(f, time.Now)
	m := manager.New(manager.Options{Store: s, MaxPending: 1 << 20, Logger: quiet(), WaitPoll: time.Millisecond})
	h := httpapi.New(httpapi.Options{Manager: m, Auth: httpapi.ContextAuth(), Logger: quiet(), WaitMax: 20 * time.Millisecond})
	a := lambdahttp.New(h, lambdahttp.Options{Logger: quiet()})
	id := fuzzSetup(f, a)

	f.Fuzz(func(t *testing.T, data []byte) {
		var ev events.APIGatewayV2HTTPRequest
		if json.Unmarshal(bytes.ReplaceAll(data, []byte(fixtureID), []byte(id)), &ev) != nil {
			return
		}
		resp, err := a.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("Handle returned an error (API Gateway would answer 500): %v", err)
		}
		// The one 5xx that is an answer, not a failure: the api function
		// holds no runtime client, so the logs, stats and exec routes are 501
		// there, and so is /metrics (CloudWatch has them), as
		// docs/openapi.yaml says.
		notServedHere := resp.StatusCode == http.StatusNotImplemented &&
			(strings.HasSuffix(ev.RawPath, "/logs") || strings.HasSuffix(ev.RawPath, "/stats") || strings.HasSuffix(ev.RawPath, "/exec") || ev.RawPath == "/metrics")
		if resp.StatusCode < 200 || (resp.StatusCode >= 500 && !notServedHere) {
			t.Fatalf("status %d for %s %q: %s", resp.StatusCode, ev.RequestContext.HTTP.Method, ev.RawPath, resp.Body)
		}
		if !resp.IsBase64Encoded && !utf8.ValidString(resp.Body) {
			t.Fatalf("a body that is not UTF-8 is not base64 encoded: %q", resp.Body)
		}
		if resp.StatusCode >= 400 && resp.Headers["Content-Type"] != "application/problem+json" {
			t.Fatalf("%d with Content-Type %q", resp.StatusCode, resp.Headers["Content-Type"])
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("the response does not encode: %v", err)
		}
	})
}

// fuzzSetup creates the fixtures' template (as an admin) and one container
// of the fixtures' user, whose id it returns.
func fuzzSetup(f *testing.F, a *lambdahttp.Adapter) string {
	f.Helper()
	var id string
	for _, name := range []string{"api-put-template.json", "api-create.json"} {
		b, err := os.ReadFile(filepath.Join("../../events", name))
		if err != nil {
			f.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(b, &ev); err != nil {
			f.Fatal(err)
		}
		resp, _ := a.Handle(context.Background(), ev)
		if resp.StatusCode >= 300 {
			f.Fatalf("%s: %d %s", name, resp.StatusCode, resp.Body)
		}
		var in container.Instance
		if json.Unmarshal([]byte(resp.Body), &in) == nil {
			id = in.ID
		}
	}
	return id
}
