package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/store/teststores"
)

// TestHostileInputs sends inputs at the limits of what API Gateway passes
// on through the function's handler on each store: never a 5xx. Ids and
// names berth could never have made are 404 before any store is asked
// (DynamoDB refuses keys over 2048 bytes).
func TestHostileInputs(t *testing.T) {
	long := strings.Repeat("Z", 2049) // over DynamoDB's 2048-byte partition key
	cases := []struct {
		name    string
		fixture string
		mod     func(ev *events.APIGatewayV2HTTPRequest)
		want    int
	}{
		{"sub over 255 characters", "create", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.Authorizer.JWT.Claims["sub"] = strings.Repeat("a", 3000)
		}, 401},
		{"sub with a NUL", "list", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.Authorizer.JWT.Claims["sub"] = "a\x00b"
		}, 401},
		{"groups claim only", "list", func(ev *events.APIGatewayV2HTTPRequest) {
			delete(ev.RequestContext.Authorizer.JWT.Claims, "sub")
		}, 401},
		{"long cursor", "list", func(ev *events.APIGatewayV2HTTPRequest) { ev.RawQueryString = "cursor=" + long }, 400},
		{"long filters", "list", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RawQueryString = "template=" + long + "&group=" + long + "&label=" + long + "%3Dv"
		}, 200},
		{"long label key", "create", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = `{"template":"busybox","labels":{"` + long + `":"v"}}`
		}, 422},
		{"long Idempotency-Key", "create", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["idempotency-key"] = strings.Repeat("k", 65)
		}, 400},
		{"body over 64 KiB", "create", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body = `{"template":"busybox","name":"` + strings.Repeat("a", 70<<10) + `"}`
		}, 413},
		{"body not base64", "create", func(ev *events.APIGatewayV2HTTPRequest) { ev.IsBase64Encoded = true }, 400},
		{"long container id", "get", func(ev *events.APIGatewayV2HTTPRequest) { setPath(ev, "GET", "/api/containers/"+long) }, 404},
		{"long container id, start", "start", func(ev *events.APIGatewayV2HTTPRequest) { setPath(ev, "POST", "/api/containers/"+long+"/start") }, 404},
		{"long container id, events", "get", func(ev *events.APIGatewayV2HTTPRequest) { setPath(ev, "GET", "/api/containers/"+long+"/events") }, 404},
		{"long template name", "get", func(ev *events.APIGatewayV2HTTPRequest) { setPath(ev, "GET", "/api/templates/"+long) }, 404},
		{"long template name, delete", "get", func(ev *events.APIGatewayV2HTTPRequest) { setPath(ev, "DELETE", "/api/templates/"+long) }, 403},
	}
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newTestAdapter(t, b.Open(t, time.Now))
		ctx := context.Background()
		if resp, _ := a.Handle(ctx, fixtureEvent(t, "put-template", "")); resp.StatusCode != http.StatusCreated {
			t.Fatalf("put-template: %d %s", resp.StatusCode, resp.Body)
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ev := fixtureEvent(t, tc.fixture, "")
				tc.mod(&ev)
				resp, err := a.Handle(ctx, ev)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.want {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.want, resp.Body)
				}
			})
		}
	})
}

func setPath(ev *events.APIGatewayV2HTTPRequest, method, path string) {
	ev.RequestContext.HTTP.Method = method
	ev.RawPath, ev.RequestContext.HTTP.Path = path, path
	if ev.PathParameters != nil {
		ev.PathParameters["proxy"] = strings.TrimPrefix(path, "/")
	}
}
