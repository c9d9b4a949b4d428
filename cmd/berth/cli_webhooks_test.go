package main

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
)

// TestCLIWebhooks: create prints the secret once; list and get show the
// subscription without it; another user cannot see or delete it; a
// refused receiver is an error naming url.
func TestCLIWebhooks(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	alice := cliEnv(srv, clienttest.AliceToken)
	bob := cliEnv(srv, clienttest.BobToken)

	first := runBerth(t, alice, "", "webhooks", "create", "https://93.184.216.34/hook",
		"--status", "running", "--status", "failed", "--template", "busybox", "-o", "json")
	first.check(t, 0, nil, nil)
	created := decodeOut[client.Webhook](t, first)
	if !strings.HasPrefix(created.Secret, "whsec_") || created.ID == "" || len(created.Statuses) != 2 || created.Template != "busybox" {
		t.Fatalf("created = %+v", created)
	}
	r := runBerth(t, alice, "", "webhooks", "list")
	r.check(t, 0, []string{created.ID, "https://93.184.216.34/hook", "running,failed"}, nil)
	if strings.Contains(r.stdout, "whsec_") {
		t.Errorf("list shows the secret:\n%s", r.stdout)
	}
	got := decodeOut[client.Webhook](t, runBerth(t, alice, "", "webhooks", "get", created.ID, "-o", "json"))
	if got.ID != created.ID || got.Secret != "" {
		t.Errorf("get = %+v; want the subscription without its secret", got)
	}
	runBerth(t, bob, "", "webhooks", "get", created.ID).check(t, 1, nil, []string{"404"})
	runBerth(t, bob, "", "webhooks", "delete", created.ID).check(t, 1, nil, []string{"404"})
	runBerth(t, alice, "", "webhooks", "create", "http://169.254.169.254/latest/meta-data/").check(t, 1, nil, []string{"url"})
	runBerth(t, alice, "", "webhooks", "delete", created.ID).check(t, 0, []string{"webhook " + created.ID + " deleted"}, nil)
	if l := decodeOut[client.Page[client.Webhook]](t, runBerth(t, alice, "", "webhooks", "list", "-o", "json")); len(l.Items) != 0 {
		t.Errorf("after delete alice lists %+v", l.Items)
	}
	created = decodeOut[client.Webhook](t, runBerth(t, alice, "", "webhooks", "create", "https://93.184.216.34/x", "-o", "json"))
	r = runBerth(t, alice, "", "webhooks", "create", "https://93.184.216.34/y")
	r.check(t, 0, []string{"secret (shown only now): whsec_"}, nil)
}
