package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/webhook"
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

	var mu sync.Mutex
	secrets := map[string]string{}
	finishes := make(chan webhook.GroupPayload, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		secret := secrets[req.URL.Path]
		mu.Unlock()
		v, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = v.Verify(body, req.Header)
		}
		if err != nil {
			t.Errorf("receiver %s: signature refused: %v", req.URL.Path, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var p webhook.GroupPayload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("receiver: %v: %s", err, body)
		}
		if p.Type == webhook.EventGroupFinished {
			if req.URL.Path != "/alice" {
				t.Errorf("receiver %s got a group finish: %s", req.URL.Path, body)
			}
			finishes <- p
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	subscribe := func(token, path string, filters map[string]any) client.Webhook {
		t.Helper()
		filters["url"] = rcv.URL + path
		var sub client.Webhook
		if err := json.Unmarshal(e.must(e.call("POST", "/api/webhooks", token, filters), http.StatusCreated).body, &sub); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		secrets[path] = sub.Secret
		mu.Unlock()
		return sub
	}
	alices := subscribe(aliceToken, "/alice", map[string]any{"group": "dag-w"})
	bobs := subscribe(bobToken, "/bob", map[string]any{})

	a, b := e.member("sleeper", "dag-w"), e.member("sleeper", "dag-w")
	e.waitFor(a.ID, fsm.Running, 90*time.Second)
	e.waitFor(b.ID, fsm.Running, 90*time.Second)
	res := e.groupResult(e.must(e.call("POST", "/api/groups/dag-w/finish", aliceToken, map[string]string{"outcome": "succeeded"}),
		http.StatusAccepted))
	var got webhook.GroupPayload
	select {
	case got = <-finishes:
	case <-time.After(90 * time.Second):
		t.Fatalf("no group.finished delivery within 90 s\n%s", tail(e.logs.String(), 4000))
	}
	if got.Data.WebhookID != alices.ID || !reflect.DeepEqual(got.Data.Group, res) || res.Group != "dag-w" || len(res.Members) != 2 {
		t.Errorf("group.finished = %+v; want subscription %s and the finish's answer %+v", got.Data, alices.ID, res)
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
