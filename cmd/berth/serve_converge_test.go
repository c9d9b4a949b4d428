package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// TestServeFailedInstanceConverges: a failed instance whose container is
// started behind berth's back (`docker start`) has it stopped again, young
// as the container is: by the monitor, which sees the start event, alone
// (reconcile_every 1h) and as the issue tried it (reconcile_every 2s). The
// instance stays failed and its events say the container was stopped.
// Before, the container ran on until it was older than orphan_grace.
func TestServeFailedInstanceConverges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		every time.Duration
	}{
		{"monitor", time.Hour},
		{"reconcile every 2s", 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, serveOptions{reconcileEvery: c.every})
			e.start()
			// Fails its first run (exit 3); runs on when started again.
			e.must(e.call("PUT", "/api/templates/flaky", adminToken, container.Template{Runtime: "docker", Image: e.image,
				PullPolicy: container.PullNever,
				Command:    []string{"sh", "-c", "test -f /ran || { touch /ran; exit 3; }; exec sleep 3600"}}), http.StatusCreated)
			in := e.create("flaky")
			failed := e.waitFor(in.ID, fsm.Failed, time.Minute)
			ref := runtime.RefOf(failed)
			ctx := context.Background()
			if _, err := e.engine.Client(failed.RuntimeNodeName).ContainerStart(ctx, runtime.ObjectName(in.ID), client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
			// Stopped again, and recorded (the event follows the stop).
			reconciled := func() bool {
				var evs struct{ Items []container.Event }
				if err := json.Unmarshal(e.must(e.call("GET", "/api/containers/"+in.ID+"/events", aliceToken, nil), http.StatusOK).body, &evs); err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(evs.Items, func(ev container.Event) bool { return ev.Type == container.EventReconciled })
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				st, err := e.engine.Inspect(ctx, ref)
				if err != nil {
					t.Fatal(err)
				}
				// The second run ended, and berth says it stopped it.
				if st.Phase == runtime.PhaseExited && st.StartedAt != nil && failed.FinishedAt != nil &&
					st.StartedAt.After(*failed.FinishedAt) && reconciled() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the failed instance's container still %s after 30s (reconciled: %t)\nserver log:\n%s",
						st.Phase, reconciled(), tail(e.logs.String(), 4000))
				}
				time.Sleep(50 * time.Millisecond)
			}
			got := e.instance(e.must(e.call("GET", "/api/containers/"+in.ID, aliceToken, nil), http.StatusOK))
			if got.Status != fsm.Failed {
				t.Fatalf("instance %s (%s), want failed", got.Status, got.StatusReason)
			}
		})
	}
}
