package configstandin_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/berth-io/berth/internal/configstandin"
	"github.com/berth-io/berth/internal/notify/eventbus"
)

// TestPutEvents: the stand-in's bus keeps what a principal may put on that
// bus, and refuses, entry by entry, what it may not (another principal,
// another bus), as EventBridge under IAM does; the AWS SDK's client and
// eventbus.Publisher talk to it unchanged.
func TestPutEvents(t *testing.T) {
	const worker, api = "LifecycleWorkerFunction", "ApiFunction"
	var s *configstandin.Store
	s = configstandin.New("eu-west-1", "123456789012", func(principal, action, resource string) bool {
		return principal == worker && action == configstandin.ActionPutEvents && resource == s.BusARN("default")
	})
	cases := []struct {
		name      string
		principal string
		bus       string
		wantPut   bool
	}{
		{"the worker on the default bus", worker, "", true},
		{"the worker on the default bus by name", worker, "default", true},
		{"the worker on another bus", worker, "other", false},
		{"the api on the default bus", api, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(s.Handler(tc.principal))
			defer srv.Close()
			client := eventbridge.New(eventbridge.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
			p := &eventbus.Publisher{Client: client, Bus: tc.bus, Attempts: 1}
			before := len(s.Events())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := p.Publish(ctx, []types.PutEventsRequestEntry{{
				Source: aws.String(eventbus.Source), DetailType: aws.String(eventbus.DetailTypeStatusChange), Detail: aws.String(`{"seq":1}`),
			}})
			evs := s.Events()[before:]
			if tc.wantPut {
				if err != nil || len(evs) != 1 || evs[0].Detail != `{"seq":1}` || evs[0].Principal != worker ||
					evs[0].Bus != "arn:aws:events:eu-west-1:123456789012:event-bus/default" {
					t.Fatalf("put: error %v, events %+v; want one on the default bus", err, evs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "AccessDeniedException") || len(evs) != 0 {
				t.Fatalf("put: error %v, events %+v; want access denied and nothing kept", err, evs)
			}
		})
	}
}
