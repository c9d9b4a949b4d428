package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestServeEndpoints: through berth serve on a real engine whose host
// publishes ports (advertise_address 127.0.0.1), a running instance names
// where each published port answers, in the API and `berth containers
// get`, and names none once stopped.
func TestServeEndpoints(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{publishing: true})
	e.start()
	e.must(e.call("PUT", "/api/templates/web", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 0.1; done`},
		Ports: []container.Port{{ContainerPort: 8080, Protocol: "tcp"}}}), http.StatusCreated)
	inst := e.create("web")
	e.waitFor(inst.ID, fsm.Running, time.Minute)
	// The worker's report after the start event brings the endpoints.
	var got container.Instance
	e.until("the running instance's endpoints", 30*time.Second, func() bool {
		got = e.instance(e.must(e.call("GET", "/api/containers/"+inst.ID, aliceToken, nil), http.StatusOK))
		return len(got.Endpoints) > 0
	})
	if len(got.Endpoints) != 1 {
		t.Fatalf("endpoints: %+v", got.Endpoints)
	}
	ep := got.Endpoints[0]
	if ep.Port != 8080 || ep.Protocol != "tcp" || ep.Host != "127.0.0.1" || ep.HostPort <= 0 || ep.Via != container.EndpointViaHost {
		t.Fatalf("endpoint: %+v", ep)
	}
	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	runBerth(t, env, "", "containers", "get", inst.ID).check(t, 0, []string{"PORT", "ENDPOINT", "8080/tcp", ep.Address(), "host"}, nil)

	e.must(e.call("POST", "/api/containers/"+inst.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	if stopped := e.waitFor(inst.ID, fsm.Stopped, time.Minute); len(stopped.Endpoints) != 0 {
		t.Fatalf("a stopped instance names endpoints: %+v", stopped.Endpoints)
	}
}
