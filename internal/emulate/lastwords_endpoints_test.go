package emulate_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/testenv"
)

// TestLastWordsAndEndpointsThroughFrontDoor shows two things the API says
// of a container, through the emulated stack's front door with its
// functions as deployed (the watcher records the ends) on a real engine
// whose host publishes ports on 127.0.0.1, advertised as 127.0.0.1:
//   - a container that prints and exits non-zero: its last lines are kept
//     with its ContainerFailed event, in the events API, and in none of
//     the stack's own logs;
//   - a container that publishes a port: while it runs, the instance names
//     where it answers (the advertised address and the host port the engine
//     chose); once stopped, nothing.
func TestLastWordsAndEndpointsThroughFrontDoor(t *testing.T) {
	t.Parallel()
	st := start(t, setup{watcher: true, publishing: true})
	const why = "why-3b9e: the disk is full"
	st.putTemplate("dying", []string{"sh", "-c", "echo working; sleep 1; echo '" + why + "' >&2; exit 2"})
	if r := st.do(http.MethodPut, "/api/templates/web", adminToken, map[string]any{
		"runtime": "docker", "image": os.Getenv(testenv.EnvTestImage), "pull_policy": "IfNotPresent",
		"command": []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 0.1; done`},
		"ports":   []any{map[string]any{"container_port": 8080, "protocol": "tcp"}}}); r.status != http.StatusCreated {
		t.Fatalf("PUT template web: %d %s", r.status, r.body)
	}
	dying := st.create(aliceToken, "dying", "dying")
	web := st.create(aliceToken, "web", "web")

	t.Run("last words", func(t *testing.T) {
		if in := st.wait(aliceToken, dying, "failed", 2*time.Minute); in["exit_code"] != float64(2) {
			t.Errorf("exit_code %v, want 2", in["exit_code"])
		}
		r := st.do(http.MethodGet, "/api/containers/"+dying+"/events", aliceToken, nil)
		var page struct {
			Items []container.Event `json:"items"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("events: %d %s", r.status, r.body)
		}
		var failed *container.Event
		for i, ev := range page.Items {
			if ev.Type == container.EventFailed {
				failed = &page.Items[i]
			}
		}
		if failed == nil || failed.LastWords == nil {
			t.Fatalf("no last words on a failure: %s", r.body)
		}
		got := map[string]string{}
		for _, l := range failed.LastWords.Lines {
			got[l.Stream] += l.Text
		}
		if got["stdout"] != "working" || got["stderr"] != why || failed.LastWords.Truncated {
			t.Errorf("last words: %+v", failed.LastWords)
		}
		if r := st.do(http.MethodGet, "/api/containers/"+dying+"/events", bobToken, nil); r.status != http.StatusNotFound {
			t.Errorf("another user's read of the events: %d %s", r.status, r.body)
		}
		if strings.Contains(st.logs.String(), "why-3b9e") {
			t.Errorf("the container's output is in the stack's own logs")
		}
	})

	t.Run("endpoints", func(t *testing.T) {
		st.wait(aliceToken, web, "running", 2*time.Minute)
		// The start's report brings the endpoints with the running status
		// or just after it.
		var in container.Instance
		deadline := time.Now().Add(time.Minute)
		for len(in.Endpoints) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("a running instance a minute on, without endpoints: %+v", in)
			}
			r := st.do(http.MethodGet, "/api/containers/"+web, aliceToken, nil)
			if r.status != http.StatusOK || json.Unmarshal(r.body, &in) != nil {
				t.Fatalf("get: %d %s", r.status, r.body)
			}
			if len(in.Endpoints) == 0 {
				time.Sleep(500 * time.Millisecond) // the worker's report is a write of its own
			}
		}
		if len(in.Endpoints) != 1 {
			t.Fatalf("endpoints: %+v", in.Endpoints)
		}
		ep := in.Endpoints[0]
		if ep.Port != 8080 || ep.Protocol != "tcp" || ep.Host != "127.0.0.1" || ep.HostPort <= 0 || ep.Via != container.EndpointViaHost {
			t.Fatalf("endpoint: %+v", ep)
		}
		if r := st.do(http.MethodPost, "/api/containers/"+web+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
			t.Fatalf("stop: %d %s", r.status, r.body)
		}
		stopped := st.wait(aliceToken, web, "stopped", 2*time.Minute)
		if eps, ok := stopped["endpoints"]; ok {
			t.Errorf("a stopped instance names endpoints: %v", eps)
		}
	})
}
