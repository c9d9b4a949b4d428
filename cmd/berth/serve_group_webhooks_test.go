package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
)

// TestServeGroupFinishWebhook: through `berth serve`, a group finish is
// delivered as group.finished, signed (checked by the Standard Webhooks
// reference library), with the finish's answer, to the owner's
// subscription filtered on that group; another owner's subscription gets
// no delivery of it.
func TestServeGroupFinishWebhook(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{extra: "\nwebhooks:\n  allowed_networks: [127.0.0.0/8]\n"})
	e.start()
	e.putTemplates()

	rcv := webhooktest.NewReceiver(t)
	subscribe := func(token, path string, filters map[string]any) client.Webhook {
		t.Helper()
		filters["url"] = rcv.URL + path
		var sub client.Webhook
		if err := json.Unmarshal(e.must(e.call("POST", "/api/webhooks", token, filters), http.StatusCreated).body, &sub); err != nil {
			t.Fatal(err)
		}
		rcv.SetSecret(path, sub.Secret)
		return sub
	}
	alices := subscribe(aliceToken, "/alice", map[string]any{"group": "dag-w"})
	bobs := subscribe(bobToken, "/bob", map[string]any{})

	a, b := e.member("sleeper", "dag-w"), e.member("sleeper", "dag-w")
	e.waitFor(a.ID, fsm.Running, 90*time.Second)
	e.waitFor(b.ID, fsm.Running, 90*time.Second)
	res := e.groupResult(e.must(e.call("POST", "/api/groups/dag-w/finish", aliceToken, map[string]string{"outcome": "succeeded"}),
		http.StatusAccepted))
	got := waitGroupFinish(t, rcv, 90*time.Second, func() string { return tail(e.logs.String(), 4000) })
	if got.WebhookID != alices.ID || !reflect.DeepEqual(got.Group, res) || res.Group != "dag-w" || len(res.Members) != 2 {
		t.Errorf("group.finished = %+v; want subscription %s and the finish's answer %+v", got, alices.ID, res)
	}
	// Both subscriptions' deliveries of the finish are written in one
	// transaction: bob's listing holds none of them.
	var page client.Page[client.Delivery]
	if err := json.Unmarshal(e.must(e.call("GET", "/api/webhooks/"+bobs.ID+"/deliveries", bobToken, nil), http.StatusOK).body, &page); err != nil {
		t.Fatal(err)
	}
	for _, d := range page.Items {
		t.Errorf("bob's subscription has a delivery of alice's: %+v", d)
	}
	var mine client.Page[client.Delivery]
	if err := json.Unmarshal(e.must(e.call("GET", "/api/webhooks/"+alices.ID+"/deliveries", aliceToken, nil), http.StatusOK).body, &mine); err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, d := range mine.Items {
		if d.Type == webhook.EventGroupFinished {
			finished++
			if d.Group != "dag-w" || (d.InstanceID != a.ID && d.InstanceID != b.ID) {
				t.Errorf("listed group delivery %+v; want group dag-w on one of its members", d)
			}
		}
	}
	if finished != 1 {
		t.Errorf("alice's subscription lists %d group.finished deliveries; want 1: %+v", finished, mine.Items)
	}
}

// waitGroupFinish waits for rcv's first group.finished delivery, which
// must have been sent to alice's path alone, and returns it.
func waitGroupFinish(t *testing.T, rcv *webhooktest.Receiver, within time.Duration, logs func() string) webhook.GroupFinished {
	t.Helper()
	deadline := time.After(within)
	for {
		for _, r := range rcv.Received() {
			if r.Type != webhook.EventGroupFinished {
				continue
			}
			if r.Path != "/alice" {
				t.Errorf("receiver %s got a group finish: %s", r.Path, r.Body)
			}
			return *r.Group
		}
		select {
		case <-rcv.Arrived():
		case <-deadline:
			t.Fatalf("no group.finished delivery within %s\n%s", within, logs())
		}
	}
}
