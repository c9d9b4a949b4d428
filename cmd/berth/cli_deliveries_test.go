package main

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
	"github.com/berth-io/berth/internal/fsm"
)

// TestCLIWebhookDeliveries: "webhooks deliveries" lists the subscription's
// deliveries, newest first, in pages; "webhooks redeliver" queues a failed
// one again under its id; both are the owner's only.
func TestCLIWebhookDeliveries(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	alice := cliEnv(srv, clienttest.AliceToken)
	bob := cliEnv(srv, clienttest.BobToken)
	inst := decodeOut[client.Instance](t, runBerth(t, alice, "", "containers", "create", "--template", "busybox", "-o", "json"))
	// Subscribed after the create (itself a delivery, container.created),
	// so that the listing holds the two changes below.
	wh := decodeOut[client.Webhook](t, runBerth(t, alice, "", "webhooks", "create", "https://93.184.216.34/hook", "-o", "json"))
	// creating → running is written through the manager: one delivery;
	// running → stop_pending by the stop: another.
	srv.Drive(t, inst.ID, fsm.Running)
	runBerth(t, alice, "", "containers", "stop", inst.ID).check(t, 0, nil, nil)

	page := decodeOut[client.Page[client.Delivery]](t, runBerth(t, alice, "", "webhooks", "deliveries", wh.ID, "-o", "json"))
	if len(page.Items) != 2 || page.Items[0].To != "stop_pending" || page.Items[1].To != "running" || page.NextCursor != "" {
		t.Fatalf("deliveries = %+v; want the stop's, then the start's", page)
	}
	newest, oldest := page.Items[0], page.Items[1]
	if oldest.From != "creating" || oldest.Status != "pending" || oldest.InstanceID != inst.ID || oldest.Seq >= newest.Seq {
		t.Errorf("oldest delivery = %+v", oldest)
	}
	runBerth(t, alice, "", "webhooks", "deliveries", wh.ID).check(t, 0,
		[]string{"STATUS", newest.ID, "running -> stop_pending", oldest.ID, "creating -> running", "pending"}, nil)
	one := runBerth(t, alice, "", "webhooks", "deliveries", wh.ID, "--limit", "1")
	one.check(t, 0, []string{newest.ID}, []string{"More deliveries: run again with --cursor"})
	all := decodeOut[client.Page[client.Delivery]](t, runBerth(t, alice, "", "webhooks", "deliveries", wh.ID, "--limit", "1", "--all-pages", "-o", "json"))
	if len(all.Items) != 2 || all.Items[0].ID != newest.ID || all.Items[1].ID != oldest.ID {
		t.Errorf("--all-pages = %+v", all.Items)
	}
	runBerth(t, bob, "", "webhooks", "deliveries", wh.ID).check(t, 1, nil, []string{"404"})

	if err := srv.Store.MarkFailed(context.Background(), oldest.ID, 12, "webhook receiver answered 503", time.Now()); err != nil {
		t.Fatal(err)
	}
	runBerth(t, alice, "", "webhooks", "deliveries", wh.ID).check(t, 0, []string{"failed", "webhook receiver answered 503"}, nil)
	runBerth(t, bob, "", "webhooks", "redeliver", wh.ID, oldest.ID).check(t, 1, nil, []string{"404"})
	runBerth(t, alice, "", "webhooks", "redeliver", wh.ID, oldest.ID).check(t, 0,
		[]string{"delivery " + oldest.ID + " queued again (pending)"}, nil)
	d := decodeOut[client.Delivery](t, runBerth(t, alice, "", "webhooks", "redeliver", wh.ID, oldest.ID, "-o", "json"))
	if d.ID != oldest.ID || d.Status != "pending" || d.Attempts != 0 || d.LastError != "" {
		t.Errorf("redelivered = %+v; want it pending, fresh, under its id", d)
	}
	runBerth(t, alice, "", "webhooks", "redeliver", wh.ID).check(t, 2, nil, nil)
}
