package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/fsm"
)

// TestServeRedeliver: through `berth serve`, a subscription's deliveries
// are listed as delivered once its receiver took them, and `berth webhooks
// redeliver` sends one of them again, to the same receiver, under the same
// webhook-id, signed (the reference library checks it), after which it is
// delivered again.
func TestServeRedeliver(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{extra: "\nwebhooks:\n  allowed_networks: [127.0.0.0/8]\n"})
	e.start()
	e.putTemplates()
	rcv := newHookReceiver(t)
	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	sub := decodeOut[client.Webhook](t, runBerth(t, env, "", "webhooks", "create", rcv.srv.URL+"/hooks", "-o", "json"))
	rcv.secret.Store(sub.Secret)

	inst := e.create("ok")
	e.waitFor(inst.ID, fsm.Stopped, 90*time.Second)
	// settled waits until every delivery of the instance is delivered, and
	// returns them.
	settled := func(want int) []client.Delivery {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var page client.Page[client.Delivery]
			r := e.must(e.call("GET", "/api/webhooks/"+sub.ID+"/deliveries", aliceToken, nil), http.StatusOK)
			if err := json.Unmarshal(r.body, &page); err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, d := range page.Items {
				if d.Status == "delivered" {
					done++
				}
			}
			if done == len(page.Items) && len(page.Items) >= want {
				return page.Items
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("deliveries not all delivered: %+v\nserver log:\n%s", page.Items, tail(e.logs.String(), 4000))
			}
		}
	}
	// pending → creating → running → stopped: three changes.
	ds := settled(3)
	var target client.Delivery
	for _, d := range ds {
		if d.To == "running" {
			target = d
		}
	}
	if target.ID == "" || target.InstanceID != inst.ID {
		t.Fatalf("no delivery of the change into running: %+v", ds)
	}
	key := hookKey{inst.ID, target.Seq}
	rcv.mu.Lock()
	before := len(rcv.byKey[key])
	rcv.mu.Unlock()
	if before == 0 {
		t.Fatalf("the receiver never took %v", key)
	}

	runBerth(t, env, "", "webhooks", "redeliver", sub.ID, target.ID).check(t, 0,
		[]string{"delivery " + target.ID + " queued again (pending)"}, nil)
	deadline := time.After(2 * time.Minute)
	for {
		rcv.mu.Lock()
		ids := append([]string(nil), rcv.byKey[key]...)
		rcv.mu.Unlock()
		if len(ids) > before {
			for _, id := range ids {
				if id != target.ID {
					t.Errorf("webhook-ids of the change: %v; want every one %s", ids, target.ID)
				}
			}
			break
		}
		select {
		case <-rcv.changed:
		case <-deadline:
			t.Fatalf("the redelivery never reached the receiver\nserver log:\n%s", tail(e.logs.String(), 4000))
		}
	}
	for _, d := range settled(3) {
		if d.ID == target.ID && d.Attempts != 0 {
			t.Errorf("the redelivered delivery = %+v; want it delivered at its first attempt", d)
		}
	}
}
